/**
 * Per-tool types: what hooks and reviewers see of a call, typed by the agent's tool set. A call is
 * a union discriminated on `toolName`, so after `if (toolName === 'book_ticket')` its arguments
 * have that tool's type, with no cast. A tool whose name is only known as `string` (remote tools,
 * MCP tools, `jsonSchemaTool`) keeps the untyped form, `{ toolName: string; input: unknown }`.
 */
import type { ApprovalRequest } from './hitl/types.ts'
import type { Tool } from './tool.ts'

/** Any list of tools, as `createAgent({ tools })` takes it (`any`: a tool's argument type is contravariant). */
export type ToolList = readonly Tool<any, string>[]

/** The names of the tools in `T` (`string` when one of them is not a literal). */
export type ToolNameOf<T extends ToolList> = T[number]['name']

/** One call to a tool of `T` as a hook sees it: `toolName` and its validated `input`. */
export type ToolCallOf<T extends ToolList> = T[number] extends infer U
  ? U extends Tool<infer A, infer N>
    ? string extends N
      ? { toolName: string; input: unknown }
      : { toolName: N; input: A }
    : never
  : never

/** An approval request for a call to a tool of `T`: `toolName` tells which, `arguments` are typed. */
export type ApprovalRequestOf<T extends ToolList> = T[number] extends infer U
  ? U extends Tool<infer A, infer N>
    ? string extends N
      ? ApprovalRequest
      : Omit<ApprovalRequest, 'toolName' | 'arguments'> & { toolName: N; arguments: A }
    : never
  : never

import { ConfigError } from './errors.ts'
import { type ApprovalRule, assertToolName, type Tool, type ToolContext, type ValidationResult } from './tool.ts'

/** Checks arguments against the tool's JSON Schema; one issue per problem, with its path. */
export type JsonSchemaValidator<A> = (args: unknown) => ValidationResult<A>

export interface JsonSchemaToolDefinition<A = Record<string, unknown>> {
  name: string
  description: string
  /** JSON Schema of the arguments, sent to the model as is (an `object` schema). */
  parameters: Record<string, unknown>
  /** Validates what the model sent against `parameters` (the caller brings the JSON Schema validator). */
  validate: JsonSchemaValidator<A>
  execute: (args: A, context: ToolContext) => unknown | Promise<unknown>
  needsApproval?: ApprovalRule<A>
  timeoutMs?: number
}

/**
 * Defines a tool from a raw JSON Schema (e.g. one a remote server describes) rather than zod.
 * The same rules as `tool()`: a name the model API accepts and an object schema.
 */
export function jsonSchemaTool<A = Record<string, unknown>>(definition: JsonSchemaToolDefinition<A>): Tool<A> {
  assertToolName(definition.name)
  const { $schema: _dialect, ...parameters } = definition.parameters
  if (parameters.type !== 'object') {
    throw new ConfigError(
      `Tool "${definition.name}": the JSON Schema must be of type "object", got ${JSON.stringify(parameters.type)}.`,
      { name: definition.name },
    )
  }
  return {
    name: definition.name,
    description: definition.description,
    parameters,
    validate: definition.validate,
    execute: definition.execute,
    ...(definition.needsApproval === undefined ? {} : { needsApproval: definition.needsApproval }),
    ...(definition.timeoutMs === undefined ? {} : { timeoutMs: definition.timeoutMs }),
  }
}

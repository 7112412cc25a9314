import type { ToolCall } from '../messages.ts'
import type { Tool } from '../tool.ts'
import type { CurrentCall } from './context.ts'
import { argumentsNotJsonText, invalidArgumentsText, unknownToolText } from './tool-result-texts.ts'

/** A call after parsing and validation: the arguments the tool will get, or why it cannot run. */
export type PreparedCall = Pick<CurrentCall, 'args' | 'invalid'>

/**
 * Parses and validates one tool call against the agent's tools: an unknown tool, arguments that
 * are not JSON, or arguments that fail the schema each give the model a message instead of a run.
 * `offered` names the tools the request actually carried (a `beforeProviderCall` hook may hide
 * some): a call to a tool that was not offered is unknown, so hiding a tool is a guarantee.
 */
export function validateCall(
  call: ToolCall,
  tools: ReadonlyMap<string, Tool<unknown>>,
  offered?: readonly string[],
): PreparedCall {
  const name = call.function.name
  const tool = tools.get(name)
  if (!tool || (offered !== undefined && !offered.includes(name))) {
    const available = offered ?? [...tools.keys()]
    return { args: undefined, invalid: { outcome: 'unknown_tool', message: unknownToolText(name, available) } }
  }
  let parsed: unknown
  const raw = call.function.arguments.trim()
  try {
    // Some endpoints send "" for a call without arguments.
    parsed = raw === '' ? {} : JSON.parse(raw)
  } catch (error) {
    return {
      args: undefined,
      invalid: { outcome: 'invalid_arguments', message: argumentsNotJsonText(name, (error as Error).message) },
    }
  }
  const validation = tool.validate(parsed)
  if (!validation.ok) {
    return { args: parsed, invalid: { outcome: 'invalid_arguments', message: invalidArgumentsText(name, validation.issues) } }
  }
  return { args: validation.value, invalid: undefined }
}

/**
 * Validates each call once: the routing guards and the opening action of one transition both
 * need it, one after the other, for the same call object. Only the last call is kept (a WeakMap
 * keyed by every call kept a result per call of the transcript for as long as the run lived:
 * ~0.7 KiB per run parked after 5 tool steps, measured); a call asked for again later, after
 * another, is validated again, with the same result.
 */
export function createCallPreparer(
  tools: ReadonlyMap<string, Tool<unknown>>,
): (call: ToolCall, offered?: readonly string[]) => PreparedCall {
  let lastCall: ToolCall | undefined
  let last: PreparedCall | undefined
  return (call, offered) => {
    if (call === lastCall && last !== undefined) return last
    const result = validateCall(call, tools, offered)
    lastCall = call
    last = result
    return result
  }
}

/** The call being handled, as the machine keeps it while the call goes through its states. */
export function openCall(call: ToolCall, prepared: PreparedCall, startedAt: number): CurrentCall {
  return {
    callId: call.id,
    toolName: call.function.name,
    rawArguments: call.function.arguments,
    args: prepared.args,
    startedAt,
    invalid: prepared.invalid,
    approval: undefined,
    result: undefined,
  }
}

import type { ElicitRequest, ElicitResult } from '@modelcontextprotocol/sdk/types.js'
import { type Answerer, askPerson, type Clock, type ToolContext } from '@signalbox/core'
import { compileArgumentsValidator } from './schema-validator.ts'

export interface McpElicitationOptions {
  /**
   * Who the server's questions go to: a person's answerer (`remoteAnswerer({ bus })` for the
   * bus, where the console or `signalbox review` answers; any `Answerer` in-process).
   */
  answerer: Answerer
  /** How long the person has. Default 5 minutes (the tool call's own timeout must leave room for it). */
  timeoutMs?: number
  clock?: Clock
}

/** What the answer may be besides the fields: the person refuses. */
export const DECLINE = 'decline'

/** A tool call in flight on a session, which a server's question belongs to. */
export interface CallInFlight {
  context: ToolContext
  /** The signalbox tool name (what the audit names). */
  toolName: string
}

/**
 * A server's `elicitation/create` (form mode) as a question to a person, through the same
 * machinery as `ask_human` (deadline, events, audit): the question names the fields the server
 * wants; the answer is a JSON object of them (checked against the server's schema; a wrong one is
 * refused and asked again), or `decline`. No answer in time is `cancel`. A question no single call
 * in flight can be tied to (none, or several on the session) is `cancel`ed: nobody could be asked
 * on behalf of the right run.
 */
export async function elicit(
  server: string,
  request: ElicitRequest,
  calls: readonly CallInFlight[],
  options: McpElicitationOptions,
  signal: AbortSignal,
): Promise<ElicitResult> {
  const params = request.params
  if (params.mode === 'url' || !('requestedSchema' in params)) return { action: 'decline' }
  const [call, ...others] = calls
  if (call === undefined || others.length > 0) return { action: 'cancel' }
  const schema = params.requestedSchema as Record<string, unknown>
  let validate: ReturnType<typeof compileArgumentsValidator>
  try {
    validate = compileArgumentsValidator(schema, `${server} elicitation`)
  } catch {
    // A schema nobody could check an answer against: not asked.
    return { action: 'decline' }
  }
  let content: Record<string, unknown> | undefined
  const check = (answer: string): string | undefined => {
    const text = answer.trim()
    if (text.toLowerCase() === DECLINE) return undefined
    let parsed: unknown
    try {
      parsed = JSON.parse(text)
    } catch {
      return `it is not a JSON object (or "${DECLINE}")`
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return 'it is not a JSON object'
    const checked = validate(parsed)
    if (!checked.ok) return checked.issues.join('; ')
    content = checked.value
    return undefined
  }
  // The question stops when the call stops, or when the server withdraws its request.
  const context: ToolContext = { ...call.context, signal: AbortSignal.any([call.context.signal, signal]) }
  try {
    const outcome = await askPerson(context, questionText(server, params.message, schema), {
      answerer: options.answerer,
      timeoutMs: options.timeoutMs ?? 5 * 60_000,
      toolName: call.toolName,
      answerSchema: schema,
      check,
      ...(options.clock ? { clock: options.clock } : {}),
    })
    if (!outcome.answered) return { action: 'cancel' }
    if (outcome.answer.answer.trim().toLowerCase() === DECLINE) return { action: 'decline' }
    return { action: 'accept', content: content as ElicitResult['content'] & object }
  } catch {
    // The call ended, the server withdrew its request, or nobody could be asked.
    return { action: 'cancel' }
  }
}

/** The server's message, then what to answer: each field with its type and limits, an example, and how to refuse. */
export function questionText(server: string, message: string, schema: Record<string, unknown>): string {
  const properties = (schema.properties ?? {}) as Record<string, Record<string, unknown>>
  const required = new Set((schema.required as string[] | undefined) ?? [])
  const lines = Object.entries(properties).map(([name, field]) => {
    const label = typeof field.title === 'string' && field.title !== name ? ` (${field.title})` : ''
    const about = typeof field.description === 'string' ? ` — ${field.description}` : ''
    return `- ${name}${label}: ${describeField(field)}${required.has(name) ? ', required' : ''}${about}`
  })
  const example = Object.fromEntries(Object.entries(properties).map(([name, field]) => [name, exampleOf(field)]))
  return [
    `The MCP server "${server}" asks: ${message}`,
    '',
    'Answer with a JSON object of these fields:',
    ...lines,
    `e.g. ${JSON.stringify(example)}`,
    `Or answer "${DECLINE}" to refuse.`,
  ].join('\n')
}

function describeField(field: Record<string, unknown>): string {
  const options = enumOptions(field)
  if (field.type === 'array') return `a list of ${options ? options.map((o) => JSON.stringify(o)).join(', ') : 'strings'}`
  if (options) return `one of ${options.map((o) => JSON.stringify(o)).join(', ')}`
  const limits: string[] = []
  if (typeof field.minimum === 'number') limits.push(`≥ ${field.minimum}`)
  if (typeof field.maximum === 'number') limits.push(`≤ ${field.maximum}`)
  if (typeof field.minLength === 'number') limits.push(`at least ${field.minLength} characters`)
  if (typeof field.maxLength === 'number') limits.push(`at most ${field.maxLength} characters`)
  if (typeof field.format === 'string') limits.push(field.format)
  const type =
    field.type === 'integer'
      ? 'a whole number'
      : field.type === 'number'
        ? 'a number'
        : field.type === 'boolean'
          ? 'true or false'
          : 'text'
  return limits.length > 0 ? `${type} (${limits.join(', ')})` : type
}

function enumOptions(field: Record<string, unknown>): string[] | undefined {
  const source = field.type === 'array' ? ((field.items ?? {}) as Record<string, unknown>) : field
  if (Array.isArray(source.enum)) return source.enum.map(String)
  const choices = (source.oneOf ?? source.anyOf) as { const?: unknown }[] | undefined
  return Array.isArray(choices) ? choices.map((c) => String(c.const)) : undefined
}

function exampleOf(field: Record<string, unknown>): unknown {
  if (field.default !== undefined) return field.default
  const options = enumOptions(field)
  if (field.type === 'array') return options ? options.slice(0, 1) : []
  if (options) return options[0]
  if (field.type === 'integer' || field.type === 'number') return typeof field.minimum === 'number' ? field.minimum : 1
  if (field.type === 'boolean') return true
  return '...'
}

/**
 * Renders resolved replies in the real OpenAI chat-completions wire format, so any client
 * (the openai SDK included) parses them exactly as it parses the real API.
 */
import type { Message } from '../messages.ts'
import type { ToolSpec } from '../provider/provider.ts'
import { type RecordedRequest, type ResolvedReply, type ScriptedError, splitFragments, splitWords } from './script.ts'

export function completionBody(id: string, model: string, reply: ResolvedReply): string {
  const message: Record<string, unknown> = { role: 'assistant', content: reply.content, refusal: null }
  if (reply.toolCalls.length > 0) message.tool_calls = reply.toolCalls
  return JSON.stringify({
    id,
    object: 'chat.completion',
    created: nowSeconds(),
    model,
    choices: [{ index: 0, message, finish_reason: reply.finishReason, logprobs: null }],
    usage: wireUsage(reply),
  })
}

/** The whole SSE stream in one string: the bytes are what the API sends, one write keeps it fast. */
export function completionStream(id: string, model: string, reply: ResolvedReply, includeUsage: boolean): string {
  const created = nowSeconds()
  // With include_usage the real API sends `usage: null` on every chunk but the last.
  const tail = includeUsage ? ',"usage":null}' : '}'
  const head = `data: {"id":${JSON.stringify(id)},"object":"chat.completion.chunk","created":${created},"model":${JSON.stringify(model)},"choices":`
  const chunk = (delta: unknown, finishReason: string | null = null) =>
    `${head}[{"index":0,"delta":${JSON.stringify(delta)},"logprobs":null,"finish_reason":${JSON.stringify(finishReason)}}]${tail}\n\n`

  let out = chunk({ role: 'assistant', content: reply.content ? '' : null })
  for (const word of splitWords(reply.content ?? '')) out += chunk({ content: word })
  reply.toolCalls.forEach((call, index) => {
    out += chunk({
      tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.function.name, arguments: '' } }],
    })
    if (call.function.arguments.length === 0) return
    for (const piece of splitFragments(call.function.arguments))
      out += chunk({ tool_calls: [{ index, function: { arguments: piece } }] })
  })
  out += chunk({}, reply.finishReason)
  if (includeUsage) out += `${head}[],"usage":${JSON.stringify(wireUsage(reply))}}\n\n`
  return `${out}data: [DONE]\n\n`
}

export function errorBody(error: ScriptedError['error']): string {
  return JSON.stringify({
    error: { message: error.message, type: error.type ?? defaultErrorType(error.status), param: null, code: error.code ?? null },
  })
}

/** The parts of a chat-completions body a test asserts on; the raw body is kept alongside. */
export function toRecordedRequest(body: Record<string, unknown>, headers: Record<string, string>): RecordedRequest {
  const tools: ToolSpec[] = []
  if (Array.isArray(body.tools)) {
    for (const tool of body.tools as { function?: Partial<ToolSpec> }[]) {
      const fn = tool?.function
      tools.push({ name: fn?.name ?? '', description: fn?.description ?? '', parameters: fn?.parameters ?? {} })
    }
  }
  return {
    model: typeof body.model === 'string' ? body.model : '',
    messages: Array.isArray(body.messages) ? (body.messages as Message[]) : [],
    tools,
    stream: body.stream === true,
    body,
    headers,
    receivedAt: Date.now(),
  }
}

function wireUsage(reply: ResolvedReply) {
  const { promptTokens, completionTokens, totalTokens } = reply.usage
  return { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: totalTokens }
}

function defaultErrorType(status: number): string {
  if (status === 401) return 'authentication_error'
  if (status === 429) return 'rate_limit_error'
  if (status >= 500) return 'server_error'
  return 'invalid_request_error'
}

const nowSeconds = () => Math.floor(Date.now() / 1000)

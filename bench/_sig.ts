import OpenAI from 'openai'
import { startBenchServer } from './lib/model-server.ts'
import { runBareLoop, type Chat, type Message } from './lib/bare-loops.ts'
import { modelFor, PROMPT, toolSchemas } from './lib/workload.ts'
import { measureInterleaved, median, nsPerStep, cpuNsPerStep } from './lib/measure.ts'
const server = await startBenchServer('child-process')
const client = new OpenAI({ baseURL: server.url, apiKey: 'x', maxRetries: 0 })
const model = modelFor(200)
const chat = (withSignal: boolean, stream: boolean): Chat => async (messages) => {
  const signal = withSignal ? new AbortController().signal : undefined
  if (!stream) {
    const c = await client.chat.completions.create({ model, messages: messages as never, tools: toolSchemas }, signal ? { signal, maxRetries: 0 } : undefined)
    return { message: c.choices[0]!.message as Message, finishReason: c.choices[0]!.finish_reason }
  }
  const s = await client.chat.completions.create({ model, messages: messages as never, tools: toolSchemas, stream: true, stream_options: { include_usage: true } }, signal ? { signal, maxRetries: 0 } : undefined)
  const calls: any[] = []; let fin = 'stop'
  for await (const ch of s) for (const c of ch.choices) { for (const p of c.delta?.tool_calls ?? []) { calls[p.index] ??= { id: '', type: 'function', function: { name: '', arguments: '' } }; if (p.id) calls[p.index].id = p.id; if (p.function?.name) calls[p.index].function.name += p.function.name; if (p.function?.arguments) calls[p.index].function.arguments += p.function.arguments } if (c.finish_reason) fin = c.finish_reason }
  return { message: calls.length ? { role: 'assistant', content: null, tool_calls: calls } : { role: 'assistant', content: 'done' }, finishReason: fin }
}
const v = (id: string, s: boolean, st: boolean) => ({ id, label: id, run: () => runBareLoop(chat(s, st), PROMPT) })
const res = await measureInterleaved([v('nostream', false, false), v('nostream+signal', true, false), v('stream', false, true), v('stream+signal', true, true)], { rounds: 7, warmup: 2, minSampleMs: 0 })
for (const m of res) console.log(m.variant.id.padEnd(18), (median(nsPerStep(m)) / 1000).toFixed(0), 'µs/step wall', (median(cpuNsPerStep(m)) / 1000).toFixed(0), 'cpu')
await server.close()

/**
 * (Process start-up with tsx takes seconds on a busy machine: the timeouts are generous; nothing
 * here is timed.)
 *
 * A stored run taken over by another host stays one trace: host A starts the run inside a
 * `request` span and is SIGKILLed in the middle of a tool call; host B takes the run over from the
 * file store and finishes it. Both export over OTLP/HTTP to a receiver started here.
 */
import { randomUUID } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { startScriptedModelServer } from '@signalbox/core/testing'
import { afterEach, describe, expect, it } from 'vitest'
import { start } from '../system/support.ts'
import { type ReceivedSpan, startOtlpReceiver } from './otlp-receiver.ts'

const closers: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close()
})

describe('trace context kept with a stored run', () => {
  it('a run taken over by another host continues its trace under the span that started it', async () => {
    const receiver = await startOtlpReceiver()
    closers.push(receiver.close)
    const model = await startScriptedModelServer({
      scripts: {
        'hotel-model': [
          { toolCalls: [{ id: 'c1', name: 'look_up', arguments: { ref: 'B-7' } }] },
          { content: 'B-7 is confirmed.' },
        ],
      },
    })
    closers.push(() => model.close())
    const dir = await mkdtemp(path.join(os.tmpdir(), 'takeover-trace-'))
    closers.push(() => rm(dir, { recursive: true, force: true }))
    const env = {
      STORE_DIR: dir,
      MODEL_URL: model.url,
      OTLP_URL: receiver.url,
      RUN_ID: `run_${randomUUID()}`,
      LEASE_MS: '1500',
    }

    const hostA = start(['test/tracing/fixtures/takeover-agent.ts'], { ...env, MODE: 'start', SERVICE: 'host-a' })
    const printed = await hostA.waitFor(/PARENT \w+ \w+[\s\S]*TOOL_HANGING|TOOL_HANGING[\s\S]*PARENT \w+ \w+/, 60_000)
    const [, traceId, parentSpanId] = /PARENT (\w+) (\w+)/.exec(printed) as unknown as [string, string, string]
    hostA.kill('SIGKILL')
    await hostA.exited

    const hostB = start(['test/tracing/fixtures/takeover-agent.ts'], { ...env, MODE: 'resume', SERVICE: 'host-b' })
    await hostB.waitFor('RUN_DONE done', 60_000)
    expect((await hostB.exited).code).toBe(0)
    model.assertDone()

    const spans = receiver.spans
    const listing = spans.map((s) => `${s.service}: ${s.name} ${s.traceId}`).join('\n')
    // Host A's spans that ended before the kill (the request, its first model call), and all of host B's.
    expect(spans.filter((s) => s.service === 'host-a').map((s) => s.name)).toEqual(
      expect.arrayContaining(['request', 'chat hotel-model']),
    )
    expect(new Set(spans.map((s) => s.traceId)), listing).toEqual(new Set([traceId]))
    const resumed = spans.filter((s) => s.service === 'host-b' && s.name === 'invoke_agent hotel')
    expect(resumed, listing).toHaveLength(1)
    const run = resumed[0] as ReceivedSpan
    expect(run.parentSpanId).toBe(parentSpanId)
    expect(run.attributes).toMatchObject({ 'signalbox.run.resumed': true, 'signalbox.run.id': env.RUN_ID })
    // The rest of the run on host B hangs under its resumed span.
    const b = spans.filter((s) => s.service === 'host-b')
    const byId = new Map(b.map((s) => [s.spanId, s]))
    const rootOf = (span: ReceivedSpan): ReceivedSpan => {
      const parent = span.parentSpanId ? byId.get(span.parentSpanId) : undefined
      return parent ? rootOf(parent) : span
    }
    expect(b.map((s) => s.name)).toEqual(expect.arrayContaining(['execute_tool look_up', 'chat hotel-model']))
    for (const span of b) expect(rootOf(span).spanId, `${span.name}\n${listing}`).toBe(run.spanId)
  }, 150_000)
})

/** `signalbox run --otlp <url>` (and OTEL_EXPORTER_OTLP_ENDPOINT): the CLI exports the run's spans over OTLP/HTTP. */
import { afterEach, describe, expect, it } from 'vitest'
import { runCli } from '../cli/support.ts'
import { startOtlpReceiver } from './otlp-receiver.ts'

const closers: (() => Promise<void>)[] = []
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()))
})

const RUN = ['run', 'test/cli/fixtures/local-agent.ts', '--scripted', '--model', 'approved', '--auto', 'approve']

describe('signalbox run --otlp', { timeout: 90_000 }, () => {
  it('exports the run, its turns, model calls, tool call and approval to the URL', async () => {
    const receiver = await startOtlpReceiver()
    closers.push(receiver.close)
    const result = await runCli([...RUN, '--otlp', receiver.url], { timeoutMs: 60_000 })
    expect(result.code, result.output).toBe(0)
    const names = receiver.spans.map((s) => s.name)
    expect(names).toEqual(
      expect.arrayContaining([
        'invoke_agent local',
        'signalbox.turn 1',
        'chat approved',
        'execute_tool send_payment',
        'signalbox.approval send_payment',
      ]),
    )
    expect(new Set(receiver.spans.map((s) => s.traceId)).size).toBe(1)
    expect(new Set(receiver.spans.map((s) => s.service))).toEqual(new Set(['signalbox-local']))
    const approval = receiver.spans.find((s) => s.name === 'signalbox.approval send_payment')
    expect(approval?.attributes).toMatchObject({
      'signalbox.approval.decision': 'approved',
      'signalbox.approval.reviewer': 'auto-approve',
    })
    // Contents stay out unless --otlp-content.
    expect(JSON.stringify(receiver.spans)).not.toContain('mallory')
  })

  it('reads OTEL_EXPORTER_OTLP_ENDPOINT (the base URL, /v1/traces added), and records contents with --otlp-content', async () => {
    const receiver = await startOtlpReceiver()
    closers.push(receiver.close)
    const base = receiver.url.replace(/\/v1\/traces$/, '')
    const result = await runCli([...RUN, '--otlp-content'], { env: { OTEL_EXPORTER_OTLP_ENDPOINT: base }, timeoutMs: 60_000 })
    expect(result.code, result.output).toBe(0)
    const call = receiver.spans.find((s) => s.name === 'execute_tool send_payment')
    expect(call?.attributes).toMatchObject({
      'gen_ai.tool.call.arguments': '{"to":"mallory","amount":9000}',
      'gen_ai.tool.call.result': 'sent 9000 to mallory',
    })
  })

  it('refuses a URL that is not http(s), before running anything', async () => {
    const result = await runCli([...RUN, '--otlp', 'localhost:4318'], { timeoutMs: 60_000 })
    expect(result.code).not.toBe(0)
    expect(result.stderr).toContain('--otlp needs an http(s) URL')
  })
})

/**
 * The hand-off example (examples/handoff/demo.ts) runs offline as a child process: triage hands
 * over, billing answers. The scripted models check what each agent was sent (billing gets its own
 * prompt and the words, not triage's tool call), and the demo exits 0 only when both
 * conversations were played to their end.
 */
import { HANDOFF_ANSWER } from '@signalbox/examples/handoff/script.ts'
import { describe, expect, it } from 'vitest'
import { runExample } from './support/run-example.ts'

describe('examples/handoff/demo.ts', () => {
  it('triage hands the conversation to billing, who answers; the result says who finished', async () => {
    const { code, stdout, stderr } = await runExample('examples/handoff/demo.ts')
    expect(stderr).toBe('')
    expect(code).toBe(0)
    expect(stdout).toContain('triage   tool.end    transfer_to_billing · executed · Transferred the conversation to "billing".')
    expect(stdout).toContain('triage   run.end     done (handed over)')
    expect(stdout).toContain('billing  tool.end    find_charges · executed · 2 charges of ARS 21,500 on T101-14B')
    expect(stdout).toContain(`Final answer\n  ${HANDOFF_ANSWER}\n`)
    expect(stdout).toContain('✔ done · started at triage · answered by billing · via billing')
  })

  it('uses SIGNALBOX_MODEL when set: an endpoint that refuses connections is reported, exit 1', async () => {
    const env = { SIGNALBOX_MODEL: 'no-such-model', OPENAI_BASE_URL: 'http://127.0.0.1:9/v1', OPENAI_API_KEY: 'none' }
    const { code, stderr } = await runExample('examples/handoff/demo.ts', [], env)
    expect(code).toBe(1)
    expect(stderr).toContain('Could not reach the model endpoint')
  })
})

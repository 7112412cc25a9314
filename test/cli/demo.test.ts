/**
 * The distributed demo (`pnpm demo:distributed`) runs to the end unattended: three processes over
 * NATS (tool host, reviewer, agent), a remote approval in the middle, a clean stop, exit 0.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { uniquePrefix } from '../support/env.ts'
import { cleanupAll, deleteStream, NATS_URL, startProcess, TSX } from './support.ts'

let prefix: string | undefined

afterEach(async () => {
  await cleanupAll()
  if (prefix) await deleteStream(prefix)
})

describe('examples/distributed/run.ts', () => {
  it('--auto: the agent, the tool host and the reviewer run as three processes; the approval travels over NATS', async () => {
    prefix = uniquePrefix()
    const demo = startProcess(['examples/distributed/run.ts', '--auto', '--nats', NATS_URL, '--prefix', prefix], {
      command: [TSX],
      name: 'demo',
    })
    const code = await Promise.race([
      demo.exited,
      demo.waitFor('never printed', 45_000).then(
        () => -1,
        () => -1,
      ),
    ])
    const out = demo.stdout
    expect(code, out + demo.stderr).toBe(0)
    const lines = out.split('\n')
    const from = (name: string) => lines.filter((line) => line.startsWith(`${name.padEnd(8)} │ `))
    // Three processes, each line prefixed with its name.
    expect(from('tools').join('\n')).toContain('serving 2 tools: move_claw, drop_claw (needs approval)')
    expect(from('reviewer').join('\n')).toContain('reviewing approval requests for agent claw')
    // The request the reviewer saw, and its decision.
    const reviewer = from('reviewer').join('\n')
    expect(reviewer).toContain('┌ approval requested')
    expect(reviewer).toMatch(/│ tool\s+drop_claw/)
    expect(reviewer).toMatch(/✔ approved drop_claw \(call_\d+, agent claw, run run_[0-9a-f-]+\) by tina/)
    expect(reviewer).toContain(
      '✔ answered "Which bear do you mean: the teddy bear or the polar bear?" by tina: "The polar bear!"',
    )
    // The agent waited for it, then the tool host ran the drop.
    const agent = from('agent').join('\n')
    expect(agent).toMatch(/approval\.requested drop_claw\(\{\}\)/)
    expect(agent).toMatch(/state\s+running\.turn\.toolCalls\.awaitingApproval/)
    expect(agent).toMatch(/approval\.decided\s+drop_claw approved by tina/)
    expect(agent).toContain('Final answer')
    expect(agent).toContain('Got it! The polar bear is in the prize chute.')
    expect(from('tools').join('\n')).toMatch(/← ok\s+drop_claw/)
    // All three stopped cleanly.
    expect(out).toContain('✔ done · agent 0 · tools 0 · reviewer 0')
  })
})

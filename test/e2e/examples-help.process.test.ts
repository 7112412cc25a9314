/**
 * Every runnable example answers `--help` with its usage and starts nothing (no model server, no
 * terminal check: stdin here is not a terminal), and the demos refuse a flag they do not know.
 */
import { describe, expect, it } from 'vitest'
import { runExample } from './support/run-example.ts'

const EXAMPLES = [
  'examples/claw/demo.ts',
  'examples/trains/demo.ts',
  'examples/handoff/demo.ts',
  'examples/mcp/demo.ts',
  'examples/travel/run.ts',
  'examples/distributed/run.ts',
]

describe.concurrent('the examples', () => {
  it.each(EXAMPLES)('%s --help prints its usage and exits 0', async (script) => {
    const { code, stdout, stderr } = await runExample(script, ['--help'])
    expect(stderr).toBe('')
    expect(code, stdout).toBe(0)
    const usage = stdout.split('\n')[0] ?? ''
    expect(usage).toMatch(/^(pnpm|tsx) /)
    expect(usage).toMatch(/\[--[a-z]/)
    // Nothing ran: no model server, no trace.
    expect(stdout).not.toContain('scripted model at')
    expect(stdout).not.toContain('run.start')
  })

  it.each(EXAMPLES.slice(0, 4))('%s refuses an unknown flag with its usage, exit 2', async (script) => {
    const { code, stdout, stderr } = await runExample(script, ['--hepl'])
    expect(code).toBe(2)
    expect(stdout).toBe('')
    expect(stderr).toContain("Unknown option '--hepl'")
    expect(stderr).toContain(`${script} [`)
  })
})

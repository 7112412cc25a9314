import { describe, expect, it } from 'vitest'
import { runExample } from './support/run-example.ts'

describe('examples/mcp/demo.ts', () => {
  it('runs offline against the real filesystem MCP server: one write denied, one approved and on disk', async () => {
    const { code, stdout, stderr } = await runExample('examples/mcp/demo.ts')
    expect(stderr).toBe('')
    expect(code).toBe(0)
    expect(stdout).toContain('write_file (needs approval)')
    expect(stdout).toMatch(/approval\.decided\s+denied by md-only policy/)
    expect(stdout).toMatch(/approval\.decided\s+approved by md-only policy/)
    expect(stdout).toContain(
      'summary.md on disk, written by the MCP server:\n# Basel trains\n\n- 07:02, platform 4\n- 08:02, platform 4',
    )
    expect(stdout).toContain('4 tool calls (3 executed, 1 approval_denied)')
  })
})

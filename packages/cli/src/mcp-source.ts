import type { Tool } from '@signalbox/core'
import { CliError } from './cli.ts'

/**
 * The tools of the MCP server behind `--mcp`: a command line (started as a child process, no
 * shell) or an `http(s)://` URL (Streamable HTTP). `approve` names the tools that need a
 * reviewer's yes (comma-separated, or `all`); the others get the default of their annotations
 * (`destructiveHint` asks). `filter` keeps only the `allow`ed tools, or drops the `deny`ed ones
 * (comma-separated server names). `mcp` is the toolset (for tracing); `close()` stops the server.
 */
export async function loadMcpTools(
  spec: string,
  approve: string | undefined,
  signal: AbortSignal | undefined,
  filter: { allow?: string | undefined; deny?: string | undefined } = {},
): Promise<{ name: string; tools: Tool<any>[]; mcp: import('@signalbox/mcp').McpToolset; close(): Promise<void> }> {
  const { mcpTools, parseCommandLine } = await import('@signalbox/mcp')
  const names = list(approve)
  const needsApproval = names.includes('all') ? true : Object.fromEntries(names.map((n) => [n, true]))
  const server = /^https?:\/\//i.test(spec) ? { url: spec } : parseCommandLine(spec)
  const allow = filter.allow === undefined ? undefined : list(filter.allow)
  const deny = filter.deny === undefined ? undefined : list(filter.deny)
  const toolset = mcpTools({
    ...server,
    needsApproval,
    ...(allow || deny ? { filter: { ...(allow ? { allow } : {}), ...(deny ? { deny } : {}) } } : {}),
  })
  try {
    const tools = await toolset.tools(signal ? { signal } : {})
    if (tools.length === 0) throw new CliError('MCP_NO_TOOLS', `the MCP server "${toolset.name}" offers no tools`)
    return { name: toolset.name, tools, mcp: toolset, close: () => toolset.close() }
  } catch (error) {
    await toolset.close()
    throw error
  }
}

const list = (names: string | undefined) =>
  (names ?? '')
    .split(',')
    .map((n) => n.trim())
    .filter((n) => n !== '')

import { ConfigError } from '@signalbox/core'

/**
 * MCP tool names may hold characters (`.`, `/`, up to 128 of them) the chat API and NATS subjects
 * refuse: each becomes `_`, and the name is cut to 64 characters after the optional prefix.
 */
export function signalboxToolName(mcpName: string, prefix = ''): string {
  return `${prefix}${mcpName}`.replace(/[^a-zA-Z0-9_-]/g, '_').slice(0, 64)
}

/** Maps every MCP name to its signalbox name; two MCP names that end up the same are a `ConfigError`. */
export function mapToolNames(server: string, mcpNames: string[], prefix?: string): Map<string, string> {
  const names = new Map<string, string>()
  const owners = new Map<string, string>()
  for (const mcpName of mcpNames) {
    const name = signalboxToolName(mcpName, prefix)
    const other = owners.get(name)
    if (other !== undefined) {
      throw new ConfigError(`MCP server "${server}": tools "${other}" and "${mcpName}" would both be named "${name}".`, {
        server,
      })
    }
    owners.set(name, mcpName)
    names.set(mcpName, name)
  }
  return names
}

import { SignalboxError } from '@signalbox/core'
import { describeError } from '@signalbox/core/internal'

/** The MCP server could not be started or reached, or refused the MCP handshake. */
export class McpConnectError extends SignalboxError {
  constructor(server: string, cause: unknown) {
    const refused = (cause as { code?: unknown })?.code === 401 || (cause as { name?: unknown })?.name === 'UnauthorizedError'
    const hint = refused ? ' The server wants authorization (HTTP 401): give an OAuth authProvider, or the token in headers.' : ''
    super('MCP_CONNECT_FAILED', `Could not connect to the MCP server "${server}": ${connectProblem(cause)}${hint}`, {
      cause,
      fault: 'runtime',
      details: { server },
    })
  }
}

/** The toolset was closed; its tools can no longer be called. */
export class McpClosedError extends SignalboxError {
  constructor(server: string) {
    super('MCP_CLOSED', `The MCP server "${server}" was closed; its tools are no longer available.`, {
      fault: 'user',
      details: { server },
    })
  }
}

/** The connection to a running server broke (its process exited, or it stopped answering over HTTP). */
export class McpServerLostError extends SignalboxError {
  constructor(server: string, cause?: unknown) {
    super('MCP_SERVER_LOST', `The MCP server "${server}" stopped${cause ? ` (${describeError(cause)})` : ''}.`, {
      cause,
      fault: 'runtime',
      details: { server },
    })
  }
}

/** The cause in words; an OAuth error by its code (`invalid_client`...), which is all some carry. */
function connectProblem(cause: unknown): string {
  const oauth = (cause as { errorCode?: unknown })?.errorCode
  const text = describeError(cause).replace(/\.+$/, '')
  if (typeof oauth === 'string') return `the authorization server refused: ${oauth}${text ? ` (${text})` : ''}.`
  return `${text}.`
}

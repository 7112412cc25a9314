export { type McpCallResult, resultText } from './call-result.ts'
export { parseCommandLine } from './command-line.ts'
export { McpClosedError, McpConnectError, McpServerLostError } from './errors.ts'
export type { McpHttpServer, McpServer, McpStdioServer, RestartBackoff } from './mcp-connection.ts'
export {
  type McpApproval,
  type McpApprovalPredicate,
  type McpArguments,
  McpToolset,
  type McpToolsOptions,
  mcpTools,
} from './mcp-tools.ts'
export { signalboxToolName } from './tool-names.ts'

export { type McpCallResult, resultText } from './call-result.ts'
export { parseCommandLine } from './command-line.ts'
export { DECLINE, type McpElicitationOptions } from './elicitation.ts'
export { McpClosedError, McpConnectError, McpServerLostError } from './errors.ts'
export type { McpInstrumentation, McpRequestWork } from './instrumentation.ts'
export type { McpHttpServer, McpServer, McpStdioServer, RestartBackoff } from './mcp-connection.ts'
export { McpToolset, type McpToolsOptions, mcpTools, type ToolHolder } from './mcp-tools.ts'
export type { McpPrompt, McpPromptMessages, McpResource } from './resources.ts'
export { signalboxToolName } from './tool-names.ts'
export {
  annotationApproval,
  type McpApproval,
  type McpApprovalPredicate,
  type McpArguments,
  type McpToolFilter,
  type McpToolInfo,
} from './tool-policy.ts'

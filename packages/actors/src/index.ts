export { type AgentConnection, type ConnectAgentOptions, connectAgent } from './agent-connection.ts'
export { type AnswerServiceOptions, startAnswerService } from './answer-service.ts'
export { type BusAnswerer, type BusAnswererOptions, createBusAnswerer } from './bus-answerer.ts'
export { type AuditFilter, busAuditLog, matchesAudit, readAudit } from './bus-audit.ts'
export { type BusReviewer, type BusReviewerOptions, createBusReviewer } from './bus-reviewer.ts'
export { sendControl, sendSteering, watchEvents } from './clients.ts'
export * from './inspect/index.ts'
export * from './nats/index.ts'
export { createRejectionReporter, msgIdPart, type RejectionReporter } from './rejections.ts'
export { discoverTools, type RemoteToolOptions, remoteTool } from './remote-tool.ts'
export type { RequestService, ServiceMode } from './request-service.ts'
export { type ReviewerService, type ReviewerServiceOptions, startReviewerService } from './reviewer-service.ts'
export {
  AgentSystem,
  type AgentSystemOptions,
  ChildRunError,
  createAgentSystem,
  type SystemRunOptions,
  type SystemRunResult,
  type TreeLimits,
} from './system/agent-system.ts'
export {
  type ChildFailurePolicy,
  type DelegateOptions,
  delegateTool,
  fanOutTool,
  type HandoffFilter,
  handoffFilters,
  handoffTool,
} from './system/delegation.ts'
export { type Directory, type DirectoryChange, type DirectoryEntry, KvDirectory, MemoryDirectory } from './system/directory.ts'
export { type FanOutResult, fanOut } from './system/fan-out.ts'
export { serveTools, TOOL_QUEUE_GROUP, type ToolHost, type ToolHostOptions } from './tool-host.ts'
export * from './trust/index.ts'

/**
 * @signalbox/actors: the agent's partners as separate actors on a bus. A NATS transport, remote
 * reviewers, answerers and tools with the services that serve them, the audit trail on the bus,
 * systems of agents that delegate and hand off across processes, and the inspector bridge.
 */
export { type AgentConnection, type ConnectAgentOptions, connectAgent } from './agents/agent-connection.ts'
export { sendControl, sendSteering, watchEvents } from './agents/clients.ts'
export { type RemoteReviewer, type RemoteReviewerOptions, remoteReviewer } from './approvals/remote-reviewer.ts'
export { type ReviewerService, type ReviewerServiceOptions, serveReviewer } from './approvals/reviewer-service.ts'
export { type AuditFilter, busAuditLog, matchesAudit, readAudit } from './audit/bus-audit.ts'
export * from './inspect/index.ts'
export * from './nats/index.ts'
export { type AnswerServiceOptions, serveAnswerer } from './questions/answer-service.ts'
export { type RemoteAnswerer, type RemoteAnswererOptions, remoteAnswerer } from './questions/remote-answerer.ts'
export { createRejectionReporter, msgIdPart, type RejectionReporter } from './requests/rejections.ts'
export type { RequestService, ServiceMode } from './requests/request-service.ts'
export * from './store/index.ts'
export {
  AgentSystem,
  type AgentSystemOptions,
  createAgentSystem,
  type SystemRunOptions,
  type SystemRunResult,
} from './system/agent-system.ts'
export { ChildRunError } from './system/child-run-error.ts'
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
export {
  type ResumableAgent,
  RunTakeover,
  type RunTakeoverOptions,
  type ScanResult,
  type TakeoverEvent,
} from './system/run-takeover.ts'
export type { TreeLimits } from './system/tree-budget.ts'
export { discoverTools, type RemoteToolOptions, remoteTool } from './tools/remote-tool.ts'
export { serveTools, TOOL_QUEUE_GROUP, type ToolHost, type ToolHostOptions } from './tools/tool-host.ts'
export * from './trust/index.ts'

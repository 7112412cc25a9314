/**
 * `@signalbox/actors`: the participants of a distributed signalbox run — remote reviewers and
 * answerers, tool hosts, the agent connection and the audit reader. Transports live in
 * `@signalbox/actors/nats`, agent systems in `/system`, the inspector bridge in `/inspect`,
 * signing and permissions in `/trust`, the JetStream run store in `/store`.
 */
export { type AgentConnection, type ConnectAgentOptions, connectAgent } from './agents/agent-connection.ts'
export { sendControl, sendSteering, watchEvents } from './agents/clients.ts'
export { type RemoteReviewer, type RemoteReviewerOptions, remoteReviewer } from './approvals/remote-reviewer.ts'
export type { RequestCheck, RequestOrigin } from './approvals/request-check.ts'
export { type ReviewerService, type ReviewerServiceOptions, serveReviewer } from './approvals/reviewer-service.ts'
export { type AuditFilter, busAuditLog, readAudit } from './audit/bus-audit.ts'
export { type AnswerServiceOptions, serveAnswerer } from './questions/answer-service.ts'
export { type RemoteAnswerer, type RemoteAnswererOptions, remoteAnswerer } from './questions/remote-answerer.ts'
export type { RequestService, ServiceMode } from './requests/request-service.ts'
export { RequestWithdrawnError, type WithdrawalReason, withdrawalOf } from './requests/withdrawal.ts'
export {
  ApprovalInvalidError,
  type ApprovalRefusal,
  type ApprovalRefusalReason,
  ApprovalRequiredError,
} from './tools/approval-errors.ts'
export { type DiscoverToolsOptions, discoverTools, type RemoteToolOptions, remoteTool } from './tools/remote-tool.ts'
export { type HostApprovalOptions, serveTools, type ToolHost, type ToolHostOptions } from './tools/tool-host.ts'

/**
 * @signalbox/core: one agent and its loop. `createAgent` runs the loop as an XState machine
 * (model, tools in zod, five hook points), with people in it (approval, steering, questions),
 * events to watch it, an OpenAI-compatible provider, and the bus contract and wire protocol the
 * distributed actors of `@signalbox/actors` speak (with an in-process bus for one process).
 */

export type { AgentOptions, RunHandle, RunOptions, RunResult } from './agent.ts'
export { Agent, createAgent, MemoryAuditLog, RunFailedError } from './agent.ts'
export { type Clock, systemClock } from './clock.ts'
export {
  AbortedError,
  BudgetExceededError,
  ConfigError,
  ErrorCode,
  type ErrorFault,
  FatalToolError,
  HookError,
  isAbortError,
  MaxTurnsExceededError,
  ProviderError,
  RunCancelledError,
  type SerializedError,
  SignalboxError,
  TimeoutError,
  ToolError,
} from './errors.ts'
export {
  AGENT_EVENT_TYPES,
  type AgentEvent,
  type AgentEventOf,
  type AgentEventType,
  type EventListener,
  type RunStatus,
  type ToolOutcome,
} from './events.ts'
export { Handoff, type HandoffResult, handoff } from './handoff.ts'
export { functionAnswerer, ScriptedAnswerer } from './hitl/answerers.ts'
export { type AskHumanOptions, type AskOutcome, type AskPersonOptions, askHumanTool, askPerson } from './hitl/ask-human.ts'
export { decideApproval, type Verdict } from './hitl/decision.ts'
export { policyReviewer, ScriptedReviewer, type ScriptedVerdict } from './hitl/reviewers.ts'
export { type TerminalOptions, terminalAnswerer, terminalReviewer } from './hitl/terminal.ts'
export type {
  Answer,
  Answerer,
  AnswerOptions,
  ApprovalContext,
  ApprovalDecision,
  ApprovalRequest,
  AuditEntry,
  AuditKind,
  AuditLog,
  Question,
  Reviewer,
  ReviewOptions,
} from './hitl/types.ts'
export { AUDIT_KINDS } from './hitl/types.ts'
export {
  type AfterToolExecutionContext,
  type AfterToolExecutionResult,
  type AfterTurnContext,
  allow,
  type BeforeProviderCallContext,
  type BeforeProviderCallResult,
  type BeforeToolExecutionContext,
  type BeforeToolExecutionResult,
  type BeforeTurnContext,
  type BeforeTurnResult,
  deny,
  HOOK_POINTS,
  type HookPoint,
  type Hooks,
  respond,
  type ToolGate,
} from './hooks.ts'
export { type IdGenerator, randomIds, sequentialIds } from './ids.ts'
export type {
  HookWork,
  Instrumentation,
  InstrumentedWork,
  ReviewWork,
  ToolWork,
} from './instrumentation.ts'
export { type JsonSchemaToolDefinition, type JsonSchemaValidator, jsonSchemaTool } from './json-schema-tool.ts'
export type { AgentMachine } from './machine/agent-machine.ts'
export type { AgentContext, AgentInput, AgentOutput, SteeringItem, StopReason } from './machine/context.ts'
export { type BudgetCheck, defaultRetryPolicy, type RetryPolicy, type SteeringPolicy } from './machine/runtime.ts'
export type {
  AssistantMessage,
  Message,
  SystemMessage,
  ToolCall,
  ToolMessage,
  Usage,
  UserMessage,
} from './messages.ts'
export { OutputValidationError, type ResponseFormat } from './output.ts'
export { OpenAIProvider, type OpenAIProviderOptions } from './provider/openai-provider.ts'
export type {
  FinishReason,
  Provider,
  ProviderCallOptions,
  ProviderRequest,
  ProviderResponse,
  ToolSpec,
} from './provider/provider.ts'
export type { RunStream, StreamItem, StreamResult } from './stream.ts'
export {
  type ApprovalRule,
  type DurableQuestion,
  type Tool,
  type ToolApproval,
  type ToolContext,
  type ToolDefinition,
  tool,
  type ValidationResult,
} from './tool.ts'
export type { ApprovalRequestOf, ToolCallOf, ToolList, ToolNameOf } from './tool-calls.ts'

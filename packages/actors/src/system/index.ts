/** `@signalbox/actors/system`: agent systems — agents that run other agents across processes, with a shared budget. */
export {
  AgentSystem,
  type AgentSystemOptions,
  createAgentSystem,
  derivedRunId,
  type KnownAgents,
  type SystemOutput,
  type SystemRunOptions,
  type SystemRunResult,
} from './agent-system.ts'
export { ChildRunError } from './child-run-error.ts'
export {
  type ChildFailurePolicy,
  type DelegateOptions,
  delegateTool,
  fanOutTool,
  type HandoffFilter,
  handoffFilters,
  handoffTool,
} from './delegation.ts'
export { type Directory, type DirectoryChange, type DirectoryEntry, KvDirectory, MemoryDirectory } from './directory.ts'
export { type FanOutResult, fanOut } from './fan-out.ts'
export type { Reattach } from './remote-run.ts'
export {
  type ResumableAgent,
  RunTakeover,
  type RunTakeoverOptions,
  type ScanResult,
  type TakeoverEvent,
} from './run-takeover.ts'
export type { TreeLimits } from './tree-budget.ts'

/** @signalbox/cli: the `signalbox` command, and the agent-module contract `signalbox run` loads. */
export {
  type AgentModule,
  type AgentModuleContext,
  type AskHumanSpec,
  agentModuleProblems,
  defineAgentModule,
} from './agent-module.ts'
export { type Command, commandHelp, EXIT } from './cli.ts'

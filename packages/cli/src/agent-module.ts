/**
 * The contract between `signalbox run` and an agent defined in a module:
 *
 *   // my-agent.ts
 *   import { defineAgentModule } from '@signalbox/cli'
 *   export default defineAgentModule({
 *     id: 'claw',
 *     instructions: 'You work a claw machine...',
 *     tools: [moveClaw],                     // run in this process
 *     remoteTools: ['drop_claw'],            // served by `signalbox tools serve` elsewhere (needs --nats)
 *     askHuman: { name: 'ask_kid' },         // escalation: answered at the terminal or over the bus
 *     script: { 'claw-demo': [...] },        // the conversation `--scripted` plays (offline)
 *     input: 'Get me the bear!',             // used when the command line gives no input
 *   })
 *
 * The module only describes the agent; `signalbox run` decides where its reviewer, answerer,
 * events, audit and remote tools live (embedded, or on a NATS bus).
 */
import { type Answerer, ConfigError, type Hooks, type Tool } from '@signalbox/core'
import type { Bus, Subjects } from '@signalbox/core/bus'
import { isName, NAME_RULE } from '@signalbox/core/internal'
import type { Scripts } from '@signalbox/core/testing'

export interface AgentModuleContext {
  /** `embedded`: everything in this process; `nats`: reviewers, answerers, tools elsewhere on the bus. */
  mode: 'embedded' | 'nats'
  bus: Bus
  subjects: Subjects
  /** Where questions go in this mode (a terminal, or the bus). */
  answerer: Answerer
}

export interface AskHumanSpec {
  /** Tool name the model calls. Default `ask_human`. */
  name?: string
  description?: string
  /** How long to wait for an answer. Default 5 minutes. */
  timeoutMs?: number
}

export interface AgentModule {
  /** The agent's id on the bus (1-64 letters, digits, `_`, `-`). */
  id: string
  /** The system prompt. */
  instructions: string
  /** Tools that run in the agent's process; a function to build them from the run's context. */
  tools?: Tool<any>[] | ((context: AgentModuleContext) => Tool<any>[] | Promise<Tool<any>[]>)
  /** Tools served by tool hosts on the bus, by name (found with `discoverTools`; needs `--nats`). */
  remoteTools?: string[]
  /** Adds the ask-a-human tool, answered by the run's answerer. */
  askHuman?: true | AskHumanSpec
  hooks?: Hooks | Hooks[]
  /** Turns before the run fails with MAX_TURNS_EXCEEDED. Default 10. */
  maxTurns?: number
  /** How long a reviewer has to decide before the call is denied by default. Default 5 minutes. */
  approvalTimeoutMs?: number
  /** The scripted conversation(s) `--scripted` plays, by model name. */
  script?: Scripts
  /** Which scripted model `--scripted` uses. Default: the first key of `script`. */
  model?: string
  /** The input used when the command line gives none. */
  input?: string
}

/** Checks an agent module definition and returns it (use it as the module's default export). */
export function defineAgentModule<M extends AgentModule>(definition: M): M {
  const problems = agentModuleProblems(definition)
  if (problems.length > 0)
    throw new ConfigError(`Invalid agent module:\n${problems.map((p) => `  - ${p}`).join('\n')}`, { problems })
  return definition
}

/** What is wrong with `value` as an agent module (empty when nothing). */
export function agentModuleProblems(value: unknown): string[] {
  if (value === null || typeof value !== 'object')
    return ['the default export must be an object: export default defineAgentModule({ id, instructions, ... })']
  const m = value as Record<string, unknown>
  const problems: string[] = []
  if (!isName(m.id)) problems.push(`id must be ${NAME_RULE} (got ${JSON.stringify(m.id)})`)
  if (typeof m.instructions !== 'string' || m.instructions.trim() === '')
    problems.push('instructions must be a non-empty string (the system prompt)')
  if (m.tools !== undefined && typeof m.tools !== 'function') {
    if (!Array.isArray(m.tools)) problems.push('tools must be an array of tools, or a function returning one')
    else for (const [i, t] of m.tools.entries()) problems.push(...toolProblems(t, `tools[${i}]`))
  }
  if (
    m.remoteTools !== undefined &&
    (!Array.isArray(m.remoteTools) || m.remoteTools.some((n) => typeof n !== 'string' || n === ''))
  ) {
    problems.push('remoteTools must be an array of tool names')
  }
  if (m.askHuman !== undefined && m.askHuman !== true && (m.askHuman === null || typeof m.askHuman !== 'object')) {
    problems.push('askHuman must be true or { name?, description?, timeoutMs? }')
  }
  for (const key of ['maxTurns', 'approvalTimeoutMs'] as const) {
    const v = m[key]
    if (v !== undefined && (typeof v !== 'number' || !Number.isFinite(v) || v <= 0))
      problems.push(`${key} must be a positive number`)
  }
  if (m.script !== undefined) {
    if (m.script === null || typeof m.script !== 'object' || Array.isArray(m.script) || Object.keys(m.script).length === 0) {
      problems.push('script must map model names to scripts: { "my-model": [steps...] }')
    } else if (m.model !== undefined && !(String(m.model) in (m.script as object)) && !('*' in (m.script as object))) {
      problems.push(`model "${String(m.model)}" has no script (scripts: ${Object.keys(m.script as object).join(', ')})`)
    }
  }
  if (m.model !== undefined && typeof m.model !== 'string') problems.push('model must be a string')
  if (m.input !== undefined && typeof m.input !== 'string') problems.push('input must be a string')
  return problems
}

/** What is wrong with `value` as a tool (empty when nothing). */
export function toolProblems(value: unknown, where: string): string[] {
  if (value === null || typeof value !== 'object')
    return [`${where} is not a tool (use tool({ name, description, schema, execute }) from @signalbox/core)`]
  const t = value as Record<string, unknown>
  const missing = ['name', 'description', 'parameters', 'validate', 'execute'].filter((key) => t[key] === undefined)
  if (missing.length > 0)
    return [`${where} is not a tool: missing ${missing.join(', ')} (use tool({ ... }) from @signalbox/core)`]
  return []
}

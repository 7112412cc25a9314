import { type ActionArgs, assign } from 'xstate'
import { EFFECT_ACTIONS, MachineActions } from './actions.ts'
import type { AgentContext, AgentMachineEvent } from './context.ts'

type Method = (context: AgentContext, params: never) => unknown

/** The names of the actions that update the context: `MachineActions`' methods that return an update. */
type UpdateName = {
  [K in keyof MachineActions]: MachineActions[K] extends (context: AgentContext, params: never) => Partial<AgentContext>
    ? K
    : never
}[keyof MachineActions]
type EffectName = (typeof EFFECT_ACTIONS)[number]

/** An action's parameter: the method's second argument (none when it takes only the context). */
type ParamsOf<K extends keyof MachineActions> = MachineActions[K] extends (context: AgentContext, params: infer P) => unknown
  ? P
  : undefined

type UpdateAction<P> = ReturnType<typeof assign<AgentContext, AgentMachineEvent, P, AgentMachineEvent, never>>
type EffectAction<P> = (args: ActionArgs<AgentContext, AgentMachineEvent, AgentMachineEvent>, params: P) => void

export type ActionTable = { [K in Exclude<UpdateName, EffectName>]: UpdateAction<ParamsOf<K>> } & {
  [K in EffectName]: EffectAction<ParamsOf<K>>
}

/** Every public method of `MachineActions` (its prototype's own names), but the effects. */
const updateNames = Object.getOwnPropertyNames(MachineActions.prototype).filter(
  (name) => name !== 'constructor' && !(EFFECT_ACTIONS as readonly string[]).includes(name),
)

/**
 * The machine's action table, made from `MachineActions`: each action calls the method of the same
 * name on the actions of the run's own agent (`actionsOf`), with the context and the action's
 * parameter. A method that returns an update is an `assign`; the effects are plain actions.
 */
export function createActionTable(actionsOf: (context: AgentContext) => MachineActions): ActionTable {
  // The prototype's functions, looked up once: every agent's actions share them.
  const methodOf = (name: string) => MachineActions.prototype[name as keyof MachineActions] as Method
  const table: Record<string, unknown> = {}
  for (const name of updateNames) {
    const method = methodOf(name)
    table[name] = assign<AgentContext, AgentMachineEvent, never, AgentMachineEvent, never>(
      ({ context }, params) => method.call(actionsOf(context), context, params) as Partial<AgentContext>,
    )
  }
  for (const name of EFFECT_ACTIONS) {
    const method = methodOf(name)
    table[name] = ({ context }: { context: AgentContext }, params: never) => {
      method.call(actionsOf(context), context, params)
    }
  }
  return table as ActionTable
}

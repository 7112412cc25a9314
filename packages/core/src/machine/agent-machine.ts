import { type AnyActorRef, assign, setup } from 'xstate'
import { ConfigError, FatalToolError } from '../errors.ts'
import { editedArgumentsRejected } from '../hitl/edited-arguments.ts'
import type { ApprovalDecision, ApprovalRequest } from '../hitl/types.ts'
import type { ToolGate } from '../hooks.ts'
import type { AssistantMessage } from '../messages.ts'
import type { ProviderResponse } from '../provider/provider.ts'
import { MachineActions, type TurnLimit } from './actions.ts'
import { createAgentWork, eventFields, isRetryable, type ToolRunOutput, type Work } from './actors.ts'
import type { AgentContext, AgentInput, AgentMachineEvent, AgentOutput, CurrentCall, RunInfo } from './context.ts'
import { createContext, runOutput } from './create-context.ts'
import { decisionApproves, decisionFits, type GuardDeps, machineGuards } from './guards.ts'
import { askForValidAnswer, createOutputGuards, failWithInvalidAnswer } from './output-check.ts'
import { createCallPreparer } from './prepare-call.ts'
import type { AgentRuntime } from './runtime.ts'
import { type RunWorker, workerActor, workerOf } from './worker.ts'

/** What one agent's runs need from it: its runtime, and its actions (with the call preparer). */
export interface AgentParts extends GuardDeps {
  act: MachineActions
}

/** Made once per agent definition (a few objects); the machine itself is shared by every agent. */
export function createAgentParts(runtime: AgentRuntime): AgentParts {
  const prepare = createCallPreparer(runtime.tools)
  return { runtime, prepare, act: new MachineActions(runtime, prepare) }
}

/*
 * The runtime is not captured in the machine: each run's actor is bound to its agent's parts when
 * it is created (`bindAgentParts`), by its context's `run` record (the same object for the whole
 * run; guards see only the context) and by its actor system (shared with its worker and the work).
 */
type AnyActorSystem = AnyActorRef['system']
const byRun = new WeakMap<RunInfo, AgentParts>()
const bySystem = new WeakMap<AnyActorSystem, AgentParts>()

/** Binds a created (or restored) run's actor to its agent, before it starts. */
export function bindAgentParts(actor: AnyActorRef, parts: AgentParts): void {
  bySystem.set(actor.system, parts)
  byRun.set((actor.getSnapshot() as { context: AgentContext }).context.run, parts)
}

const of = (context: AgentContext): AgentParts => byRun.get(context.run) ?? unbound()
const runtimeOfSystem = (system: AnyActorSystem) => (bySystem.get(system) ?? unbound()).runtime

/** An actor of the shared machine made outside an `Agent` has no runtime to run with. */
function unbound(): never {
  throw new ConfigError(
    'This agent machine actor is not bound to an agent: start runs with agent.start() / agent.run() (or agent.resume()), not createActor(agent.machine).',
  )
}

/** Every named guard, made once: each asks the run's own agent. */
const guards = {
  ...machineGuards(of),
  ...createOutputGuards((context) => of(context).runtime),
}

/** Set only in states entered with a call open, a reply received. */
const current = (context: AgentContext) => context.current as CurrentCall
const reply = (context: AgentContext) => context.reply as AssistantMessage

const agentWork = createAgentWork(runtimeOfSystem)
type WorkName = keyof typeof agentWork

/**
 * The work of each wait state, with its input (made from the context when the state is entered,
 * and again when a stored run is restored in that state: same request id, same absolute deadline).
 */
const waits = {
  runningBeforeTurn: [
    { src: 'beforeTurnHook', input: (context) => ({ run: context.run, turn: context.turn, messages: context.messages }) },
  ],
  runningBeforeProviderCall: [
    {
      src: 'beforeProviderCallHook',
      input: (context) => ({ run: context.run, turn: context.turn, messages: context.messages }),
    },
  ],
  callingModel: [
    {
      src: 'callModel',
      input: (context) => ({
        turn: context.turn,
        messages: context.model.outgoing?.messages ?? context.messages,
        // Undefined: the agent's own tools (the work looks them up; inputs stay data).
        tools: context.model.outgoing?.tools,
        base: eventFields(context.run),
      }),
    },
  ],
  // An absolute time, not `after`: a restored run re-arms it.
  waitingToRetry: [{ src: 'deadline', input: (context) => ({ at: context.model.retryAt }) }],
  runningBeforeToolExecution: [
    {
      src: 'beforeToolExecutionHook',
      input: (context) => ({ run: context.run, turn: context.turn, call: current(context) }),
    },
  ],
  evaluatingApprovalRule: [{ src: 'evaluateApprovalRule', input: (context) => ({ call: current(context) }) }],
  awaitingApproval: [
    {
      src: 'requestApproval',
      input: (context) => ({ request: current(context).approval as ApprovalRequest, run: context.run }),
    },
    // Absolute, so a restored run re-arms it (or it fires at once); with the request, so a decision
    // stored by the deadline while no process ran the run is recovered (`Reviewer.recover`).
    {
      src: 'deadline',
      input: (context) => {
        const approval = current(context).approval as ApprovalRequest
        return { at: approval.deadline, approval }
      },
    },
  ],
  executingTool: [{ src: 'executeTool', input: (context) => ({ run: context.run, call: current(context) }) }],
  runningAfterToolExecution: [
    {
      src: 'afterToolExecutionHook',
      input: (context) => {
        const call = current(context)
        return { run: context.run, turn: context.turn, call, result: call.result ?? { output: '', isError: false } }
      },
    },
  ],
  runningAfterTurn: [
    {
      src: 'afterTurnHook',
      input: (context) => ({
        run: context.run,
        turn: context.turn,
        reply: reply(context),
        toolResults: context.toolResults,
        messages: context.messages,
      }),
    },
  ],
} satisfies Record<string, { src: WorkName; input: (context: AgentContext) => unknown }[]>
type WaitName = keyof typeof waits

/** Starts the work of wait state `wait` on the run's worker. */
function startWait(worker: RunWorker, wait: WaitName, context: AgentContext): void {
  const specs: readonly { src: WorkName; input: (context: AgentContext) => unknown }[] = waits[wait]
  for (let i = 0; i < specs.length; i++) {
    const spec = specs[i] as (typeof specs)[number]
    worker.start(agentWork[spec.src] as Work, spec.input(context))
  }
}

/** The entry of a wait state: its work starts (its exit, `stopWork`, stops it). */
const work = (wait: WaitName) => ({ type: 'startWork' as const, params: wait })

/**
 * A restored run's worker restarts the work of the state the run was saved in, with the same
 * inputs (they are made from the restored context): the model is called again, the approval shown
 * again with its request id, the deadline re-armed from its absolute time.
 */
function resumeWait(worker: RunWorker, parent: AnyActorRef): void {
  const snapshot = parent.getSnapshot() as { status: string; value: unknown; context: AgentContext }
  if (snapshot.status !== 'active') return
  // The wait states are leaves named as in `waits`: follow the state value down to its leaf.
  let value = snapshot.value
  while (value !== null && typeof value === 'object') value = Object.values(value)[0]
  if (typeof value === 'string' && Object.hasOwn(waits, value)) startWait(worker, value as WaitName, snapshot.context)
}

/**
 * The agent loop as a statechart, one machine for every agent. States are the loop's phases and
 * its five hook points; every wait (hook, model, reviewer, tool) is a state whose work the run's
 * worker starts on entry and aborts on exit (its signal), so leaving the state (cancel, steering,
 * timeout) stops the work.
 *
 * A hook state with no hook registered is passed through in the same macrostep (an eventless
 * transition), so an agent pays only for the hooks it has. What the guards, actions and actors
 * do lives beside this file; this one is the picture of the loop.
 */
export const agentMachine = setup({
  types: {
    context: {} as AgentContext,
    events: {} as AgentMachineEvent,
    input: {} as AgentInput,
    output: {} as AgentOutput,
  },
  actors: { worker: workerActor(resumeWait) },
  guards,
  actions: {
    startWork: ({ context, system }, wait: WaitName) => startWait(workerOf(system) ?? unbound(), wait, context),
    stopWork: ({ system }) => workerOf(system)?.stop(),
    emitRunStart: ({ context }) => of(context).act.emitRunStart(context),
    emitTurnStart: ({ context }) => of(context).act.emitTurnStart(context),
    emitModelRequest: ({ context }) => of(context).act.emitModelRequest(context),
    emitTurnEnd: ({ context }) => of(context).act.emitTurnEnd(context),
    emitRunError: ({ context }) => of(context).act.emitRunError(context),
    emitRunEnd: ({ context }) => of(context).act.emitRunEnd(context),
    emitModelResponse: ({ context }, output: ProviderResponse & { durationMs: number }) =>
      of(context).act.emitModelResponse(context, output),
    emitToolStart: ({ context }) => of(context).act.emitToolStart(context),
    cancel: assign(({ context }, params: { reason: string | undefined }) =>
      of(context).act.cancel(params.reason ?? 'cancelled by request'),
    ),
    stopAtLimit: assign(({ context }, limit: TurnLimit) => of(context).act.stopAtLimit(context, limit)),
    stopByHook: assign(({ context }, params: { reason: string | undefined }) =>
      of(context).act.cancel(`stopped by beforeTurn hook: ${params.reason ?? ''}`, 'hook_stop'),
    ),
    failWithHookError: assign(({ context }, { error }: { error: unknown }) => of(context).act.failWithHookError(error)),
    failWithRuleError: assign(({ context }, { error }: { error: unknown }) => of(context).act.failWithRuleError(error)),
    queueSteering: assign(({ context }, steer: { text: string; from?: string | undefined }) =>
      of(context).act.queueSteering(context, steer),
    ),
    resetModelCall: assign({ model: ({ context }) => ({ ...context.model, attempt: 1, outgoing: undefined }) }),
    sendRewritten: assign({
      model: ({ context }, outgoing: AgentContext['model']['outgoing']) => ({ ...context.model, attempt: 1, outgoing }),
    }),
    acceptReply: assign(({ context }, response: ProviderResponse) => of(context).act.acceptReply(context, response)),
    scheduleModelRetry: assign(({ context }, { error }: { error: unknown }) =>
      of(context).act.scheduleModelRetry(context, error),
    ),
    nextAttempt: assign({ model: ({ context }) => ({ ...context.model, attempt: context.model.attempt + 1 }) }),
    failWithProviderError: assign(({ context }, { error }: { error: unknown }) =>
      of(context).act.failWithProviderError(context, error),
    ),
    openCall: assign(({ context }) => of(context).act.openCall(context)),
    handedOver: assign(({ context }) => of(context).act.handedOver(context)),
    applySteering: assign(({ context }) => of(context).act.applySteering(context)),
    callInvalid: assign(({ context }) => of(context).act.callInvalid(context)),
    gated: assign(({ context }, gate: ToolGate) => of(context).act.gated(context, gate)),
    openApproval: assign(({ context }) => of(context).act.openApproval(context)),
    approvalDecided: assign(({ context }, decision: ApprovalDecision) => of(context).act.approvalDecided(context, decision)),
    approvalTimedOut: assign(({ context }) => of(context).act.approvalTimedOut(context)),
    approvalUnavailable: assign(({ context }, reason: string) => of(context).act.approvalUnavailable(context, reason)),
    rejectDecision: ({ context }, rejected: { decision: unknown; reason?: string }) =>
      of(context).act.rejectDecision(context, rejected),
    acceptToolOutput: assign(({ context }, output: ToolRunOutput) => of(context).act.acceptToolOutput(context, output)),
    failWithToolError: assign(({ context }, { error }: { error: unknown }) => of(context).act.failWithToolError(error)),
    toolFailed: assign(({ context }, { error }: { error: unknown }) => of(context).act.toolFailed(context, error)),
    rewritten: assign(({ context }, rewrite: { output: string; isError: boolean }) =>
      of(context).act.rewritten(context, rewrite),
    ),
    recordToolResult: assign(({ context }) => of(context).act.recordToolResult(context)),
    startTurn: assign(({ context }) => of(context).act.startTurn(context)),
    acceptReplyAndOpen: assign(({ context }, response: ProviderResponse) =>
      of(context).act.acceptReplyAndOpen(context, response),
    ),
    finishCall: assign(({ context }, output: ToolRunOutput) => of(context).act.finishCall(context, output)),
    finishRewritten: assign(({ context }, rewrite: { output: string; isError: boolean }) =>
      of(context).act.finishRewritten(context, rewrite),
    ),
    nextTurn: assign(({ context }, announce: boolean) => of(context).act.nextTurn(context, announce)),
    finishStep: assign(({ context }, output: ToolRunOutput) => of(context).act.finishStep(context, output)),
    finishWithHandoff: assign({ output: '', stopReason: 'handoff' }),
    askForValidAnswer: assign(({ context }) => askForValidAnswer(context, of(context).runtime)),
    failWithInvalidAnswer: assign(({ context }) => failWithInvalidAnswer(context, of(context).runtime)),
    finishWithAnswer: assign({ output: ({ context }) => context.reply?.content ?? '', stopReason: 'final_answer' }),
  },
}).createMachine({
  id: 'agent',
  description: 'One run of a signalbox agent: call the model, run the tools it asks for, feed results back, repeat.',
  context: ({ input }) => createContext(input),
  // The run's worker: does the work of every wait state (see worker.ts).
  invoke: { id: 'worker', src: 'worker' },
  initial: 'idle',
  output: ({ context }) => runOutput(context),
  states: {
    idle: {
      description: 'Created, not started.',
      on: {
        'agent.start': { target: 'running', actions: 'emitRunStart' },
        // E.g. `run(input, { signal })` with a signal that was already aborted.
        'agent.cancel': { target: 'cancelled', actions: { type: 'cancel', params: ({ event }) => ({ reason: event.reason }) } },
      },
    },
    running: {
      description: 'The loop. A correction can be queued at any time; cancel ends the run and aborts its work.',
      initial: 'turn',
      on: {
        'agent.cancel': { target: 'cancelled', actions: { type: 'cancel', params: ({ event }) => ({ reason: event.reason }) } },
        'agent.steer': { actions: { type: 'queueSteering', params: ({ event }) => event } },
        // A decision that arrives when no approval is pending is late: record it, never apply it.
        'approval.decision': {
          actions: {
            type: 'rejectDecision',
            params: ({ event }) => ({
              decision: event.decision,
              reason: 'no approval is pending (late or duplicate decision)',
            }),
          },
        },
      },
      states: {
        turn: {
          description: 'One trip round the loop: the model, then the tools it asked for.',
          initial: 'beforeTurn',
          entry: 'startTurn',
          states: {
            beforeTurn: {
              description: 'Hook point: check a budget, log the turn, or stop the run.',
              tags: ['hook'],
              always: [
                { guard: 'turnLimitReached', target: '#agent.failed', actions: { type: 'stopAtLimit', params: 'max_turns' } },
                { guard: 'tokenBudgetSpent', target: '#agent.failed', actions: { type: 'stopAtLimit', params: 'max_tokens' } },
                { guard: 'externalBudgetSpent', target: '#agent.failed', actions: { type: 'stopAtLimit', params: 'budget' } },
                { guard: 'hasBeforeTurn', target: 'runningBeforeTurn' },
                { guard: 'hasBeforeProviderCall', target: 'beforeProviderCall', actions: 'emitTurnStart' },
                // The turn's entry has just reset the model call.
                { target: 'callingModel', actions: 'emitTurnStart' },
              ],
            },
            runningBeforeTurn: {
              description: 'Hook point beforeTurn: waiting for the hooks.',
              tags: ['hook', 'wait'],
              entry: work('runningBeforeTurn'),
              exit: 'stopWork',
              on: {
                'work.done': [
                  {
                    guard: ({ event }) => event.output?.stop === true,
                    target: '#agent.cancelled',
                    actions: { type: 'stopByHook', params: ({ event }) => ({ reason: event.output?.reason }) },
                  },
                  // Straight to the next hook's wait: each pass-through state costs XState a microstep.
                  { guard: 'hasBeforeProviderCall', target: 'runningBeforeProviderCall', actions: 'emitTurnStart' },
                  { target: 'callingModel', actions: ['emitTurnStart', 'resetModelCall'] },
                ],
                'work.error': {
                  target: '#agent.failed',
                  actions: { type: 'failWithHookError', params: ({ event }) => ({ error: event.error }) },
                },
              },
            },
            beforeProviderCall: {
              description: 'Hook point: change what is sent (trim messages, add context, hide a tool).',
              tags: ['hook'],
              always: [
                { guard: 'hasBeforeProviderCall', target: 'runningBeforeProviderCall' },
                { target: 'callingModel', actions: 'resetModelCall' },
              ],
            },
            runningBeforeProviderCall: {
              description: 'Hook point beforeProviderCall: waiting for the hooks.',
              tags: ['hook', 'wait'],
              entry: work('runningBeforeProviderCall'),
              exit: 'stopWork',
              on: {
                'work.done': { target: 'callingModel', actions: { type: 'sendRewritten', params: ({ event }) => event.output } },
                'work.error': {
                  target: '#agent.failed',
                  actions: { type: 'failWithHookError', params: ({ event }) => ({ error: event.error }) },
                },
              },
            },
            callingModel: {
              description: 'Waiting for the model (streaming). Transient errors are retried with backoff.',
              tags: ['wait', 'model'],
              entry: ['emitModelRequest', work('callingModel')],
              exit: 'stopWork',
              on: {
                // Routed here rather than through a pass-through state: each microstep costs
                // XState a snapshot, and this runs once per tool step (see BENCHMARKS.md).
                'work.done': [
                  // Direct routes to where the reply's first call goes, opened with the reply.
                  {
                    guard: 'replyRunsAtOnce',
                    target: 'toolCalls.executingTool',
                    actions: [
                      { type: 'acceptReplyAndOpen', params: ({ event }) => event.output },
                      { type: 'emitModelResponse', params: ({ event }) => event.output },
                    ],
                  },
                  {
                    guard: 'replyGoesToHook',
                    target: 'toolCalls.runningBeforeToolExecution',
                    actions: [
                      { type: 'acceptReplyAndOpen', params: ({ event }) => event.output },
                      { type: 'emitModelResponse', params: ({ event }) => event.output },
                    ],
                  },
                  {
                    guard: ({ event }) => (event.output.message.tool_calls?.length ?? 0) > 0,
                    target: 'toolCalls',
                    actions: [
                      { type: 'acceptReply', params: ({ event }) => event.output },
                      { type: 'emitModelResponse', params: ({ event }) => event.output },
                    ],
                  },
                  {
                    target: 'afterTurn',
                    actions: [
                      { type: 'acceptReply', params: ({ event }) => event.output },
                      { type: 'emitModelResponse', params: ({ event }) => event.output },
                    ],
                  },
                ],
                'work.error': [
                  {
                    guard: ({ context, event }) =>
                      isRetryable(event.error) && context.model.attempt < of(context).runtime.retry.maxAttempts,
                    target: 'waitingToRetry',
                    actions: { type: 'scheduleModelRetry', params: ({ event }) => ({ error: event.error }) },
                  },
                  {
                    target: '#agent.failed',
                    actions: { type: 'failWithProviderError', params: ({ event }) => ({ error: event.error }) },
                  },
                ],
              },
            },
            waitingToRetry: {
              description: 'Backing off before calling the model again.',
              tags: ['wait'],
              // Work on an absolute time, not `after`: a restored run re-arms it.
              entry: work('waitingToRetry'),
              exit: 'stopWork',
              on: { 'deadline.reached': { target: 'callingModel', actions: 'nextAttempt' } },
            },
            toolCalls: {
              description: 'One pass per tool call the model asked for, in order.',
              initial: 'nextCall',
              states: {
                nextCall: {
                  description: 'Takes the next tool call of the reply, in order, or ends the pass.',
                  always: [
                    // Fast path: no afterTurn hook, no hand-off: straight into the next turn.
                    { guard: 'nextTurnAtOnce', target: '#agent.running.turn', reenter: true, actions: 'emitTurnEnd' },
                    { guard: 'callsDoneToAfterTurnHook', target: '#agent.running.turn.runningAfterTurn' },
                    { guard: 'allCallsHandled', target: '#agent.running.turn.afterTurn' },
                    // Fast paths, decided by the same routing as the states below.
                    { guard: 'nextCallGoesToHook', target: 'runningBeforeToolExecution', actions: 'openCall' },
                    { guard: 'nextCallRunsAtOnce', target: 'executingTool', actions: 'openCall' },
                    { target: 'steeringCheck', actions: 'openCall' },
                  ],
                },
                steeringCheck: {
                  description: 'A queued correction cancels this call; the model reads the correction instead.',
                  always: [
                    { guard: 'callHandedOver', target: 'afterToolExecution', actions: 'handedOver' },
                    { guard: 'callSteered', target: 'afterToolExecution', actions: 'applySteering' },
                    { target: 'validatingArguments' },
                  ],
                },
                validatingArguments: {
                  description: 'Unknown tool or arguments that fail the schema: the tool does not run.',
                  always: [
                    { guard: 'callIsInvalid', target: 'afterToolExecution', actions: 'callInvalid' },
                    { target: 'beforeToolExecution' },
                  ],
                },
                beforeToolExecution: {
                  description: 'Hook point: allow the call, deny it with a reason, or answer it with a ready result.',
                  tags: ['hook'],
                  always: [{ guard: 'callGoesToHook', target: 'runningBeforeToolExecution' }, { target: 'approvalCheck' }],
                },
                runningBeforeToolExecution: {
                  description: 'Hook point beforeToolExecution: waiting for the hooks.',
                  tags: ['hook', 'wait'],
                  entry: work('runningBeforeToolExecution'),
                  exit: 'stopWork',
                  on: {
                    'work.done': [
                      {
                        guard: ({ event }) => event.output.action !== 'allow',
                        target: 'afterToolExecution',
                        actions: { type: 'gated', params: ({ event }) => event.output },
                      },
                      { guard: 'callRunsAtOnce', target: 'executingTool' },
                      { target: 'approvalCheck' },
                    ],
                    'work.error': {
                      target: '#agent.failed',
                      actions: { type: 'failWithHookError', params: ({ event }) => ({ error: event.error }) },
                    },
                  },
                },
                approvalCheck: {
                  description: 'Does this call need a person\u2019s yes?',
                  always: [
                    // A correction that arrived while a hook was deciding still beats the call: it has not started.
                    { guard: 'callSteered', target: 'steeringCheck' },
                    { guard: 'approvalAlways', target: 'awaitingApproval', actions: 'openApproval' },
                    { guard: 'approvalByRule', target: 'evaluatingApprovalRule' },
                    { target: 'executingTool' },
                  ],
                },
                evaluatingApprovalRule: {
                  description: 'The tool\u2019s needsApproval predicate looks at the arguments.',
                  entry: work('evaluatingApprovalRule'),
                  exit: 'stopWork',
                  on: {
                    'work.done': [
                      { guard: 'callSteered', target: 'steeringCheck' },
                      { guard: ({ event }) => event.output, target: 'awaitingApproval', actions: 'openApproval' },
                      { target: 'executingTool' },
                    ],
                    'work.error': {
                      target: '#agent.failed',
                      actions: { type: 'failWithRuleError', params: ({ event }) => ({ error: event.error }) },
                    },
                  },
                },
                awaitingApproval: {
                  description: 'Waiting for a reviewer\u2019s decision on the exact call. No answer by the deadline: deny.',
                  tags: ['wait', 'human'],
                  // The request, and its deadline: absolute, so a restored run re-arms it (or it fires at once).
                  entry: work('awaitingApproval'),
                  exit: 'stopWork',
                  on: {
                    'deadline.reached': { target: 'afterToolExecution', actions: 'approvalTimedOut' },
                    'approval.decision': [
                      {
                        // An approval with edited arguments the tool rejects does not run (the next branch refuses it).
                        guard: ({ context, event }) =>
                          decisionApproves(context, event) &&
                          !editedArgumentsRejected(of(context).runtime.tools.get(current(context).toolName), event.decision),
                        target: 'executingTool',
                        actions: { type: 'approvalDecided', params: ({ event }) => event.decision as ApprovalDecision },
                      },
                      {
                        guard: ({ context, event }) => decisionFits(context, event),
                        target: 'afterToolExecution',
                        actions: { type: 'approvalDecided', params: ({ event }) => event.decision as ApprovalDecision },
                      },
                      { actions: { type: 'rejectDecision', params: ({ event }) => ({ decision: event.decision }) } },
                    ],
                    'approval.unavailable': {
                      target: 'afterToolExecution',
                      actions: { type: 'approvalUnavailable', params: ({ event }) => event.reason },
                    },
                    // A correction while the person is still deciding withdraws the request.
                    'agent.steer': {
                      target: 'steeringCheck',
                      actions: { type: 'queueSteering', params: ({ event }) => event },
                    },
                  },
                },
                executingTool: {
                  description: 'The tool runs (locally or on a remote host). A throw becomes an error result.',
                  tags: ['wait', 'tool'],
                  entry: ['emitToolStart', work('executingTool')],
                  exit: 'stopWork',
                  on: {
                    'work.done': [
                      {
                        guard: 'hasAfterToolExecution',
                        target: 'runningAfterToolExecution',
                        actions: { type: 'acceptToolOutput', params: ({ event }) => event.output },
                      },
                      // The reply's last call, nothing between it and the next model call: straight there.
                      {
                        guard: 'stepGoesToModel',
                        target: '#agent.running.turn.callingModel',
                        actions: { type: 'finishStep', params: ({ event }) => event.output },
                      },
                      // No hook: the result joins the transcript now (one microstep less per step).
                      { target: 'nextCall', actions: { type: 'finishCall', params: ({ event }) => event.output } },
                    ],
                    'work.error': [
                      {
                        // A supervisor giving up on a child (or any fatal tool failure) ends the run.
                        guard: ({ event }) => event.error instanceof FatalToolError,
                        target: '#agent.failed',
                        actions: { type: 'failWithToolError', params: ({ event }) => ({ error: event.error }) },
                      },
                      {
                        target: 'afterToolExecution',
                        actions: { type: 'toolFailed', params: ({ event }) => ({ error: event.error }) },
                      },
                    ],
                  },
                },
                afterToolExecution: {
                  description: 'Hook point: rewrite what the model will read (mask personal data, shorten output).',
                  tags: ['hook'],
                  always: [
                    { guard: 'hasAfterToolExecution', target: 'runningAfterToolExecution' },
                    { target: 'nextCall', actions: 'recordToolResult' },
                  ],
                },
                runningAfterToolExecution: {
                  description: 'Hook point afterToolExecution: waiting for the hooks.',
                  tags: ['hook', 'wait'],
                  entry: work('runningAfterToolExecution'),
                  exit: 'stopWork',
                  on: {
                    'work.done': [
                      {
                        guard: 'lastCallToAfterTurnHook',
                        target: '#agent.running.turn.runningAfterTurn',
                        actions: { type: 'finishRewritten', params: ({ event }) => event.output },
                      },
                      { target: 'nextCall', actions: { type: 'finishRewritten', params: ({ event }) => event.output } },
                    ],
                    'work.error': {
                      target: '#agent.failed',
                      actions: { type: 'failWithHookError', params: ({ event }) => ({ error: event.error }) },
                    },
                  },
                },
              },
            },
            afterTurn: {
              description: 'Hook point: save progress, update a dashboard, count the cost.',
              tags: ['hook'],
              always: [{ guard: 'hasAfterTurn', target: 'runningAfterTurn' }, { target: 'turnEnd' }],
            },
            runningAfterTurn: {
              description: 'Hook point afterTurn: waiting for the hooks.',
              tags: ['hook', 'wait'],
              entry: work('runningAfterTurn'),
              exit: 'stopWork',
              on: {
                'work.done': [
                  // Straight into the next turn's first wait, unless a limit stops it (then through beforeTurn).
                  {
                    guard: 'nextTurnToBeforeTurnHook',
                    target: 'runningBeforeTurn',
                    actions: { type: 'nextTurn', params: false },
                  },
                  {
                    guard: 'nextTurnToBeforeProviderCallHook',
                    target: 'runningBeforeProviderCall',
                    actions: { type: 'nextTurn', params: true },
                  },
                  { guard: 'nextTurnToModel', target: 'callingModel', actions: { type: 'nextTurn', params: true } },
                  {
                    guard: ({ context }) => context.calls.length > 0 && !context.handoff,
                    target: '#agent.running.turn',
                    reenter: true,
                    actions: 'emitTurnEnd',
                  },
                  { target: 'turnEnd' },
                ],
                'work.error': {
                  target: '#agent.failed',
                  actions: { type: 'failWithHookError', params: ({ event }) => ({ error: event.error }) },
                },
              },
            },
            turnEnd: {
              description: 'After a reply with tool calls, another turn; after a final answer (or a hand-off), done.',
              always: [
                { guard: 'handoffRequested', target: '#agent.done', actions: ['emitTurnEnd', 'finishWithHandoff'] },
                { guard: 'replyHasToolCalls', target: '#agent.running.nextTurn', actions: 'emitTurnEnd' },
                // With an output schema: one more turn to fix an answer that does not match, then fail.
                { guard: 'answerNeedsRetry', target: '#agent.running.nextTurn', actions: ['emitTurnEnd', 'askForValidAnswer'] },
                { guard: 'answerInvalid', target: '#agent.failed', actions: ['emitTurnEnd', 'failWithInvalidAnswer'] },
                { target: '#agent.done', actions: ['emitTurnEnd', 'finishWithAnswer'] },
              ],
            },
          },
        },
        nextTurn: { description: 'Back round the loop.', always: 'turn' },
      },
    },
    done: {
      description: 'The model gave its final answer.',
      type: 'final',
      entry: [assign({ status: 'done' }), 'emitRunEnd'],
    },
    failed: {
      description: 'A hook threw, the provider refused, or maxTurns was reached.',
      type: 'final',
      entry: [assign({ status: 'failed' }), 'emitRunError', 'emitRunEnd'],
    },
    cancelled: {
      description: 'Cancelled by request, by an aborted signal, or stopped by a beforeTurn hook.',
      type: 'final',
      entry: [assign({ status: 'cancelled' }), 'emitRunEnd'],
    },
  },
})

export type AgentMachine = typeof agentMachine

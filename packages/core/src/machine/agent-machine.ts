import { assign, setup } from 'xstate'
import { FatalToolError, RunCancelledError } from '../errors.ts'
import { editedArgumentsRejected } from '../hitl/edited-arguments.ts'
import type { ApprovalDecision } from '../hitl/types.ts'
import type { ToolGate } from '../hooks.ts'
import type { ProviderResponse } from '../provider/provider.ts'
import type { TurnLimit } from './actions.ts'
import { isRetryable, type ToolRunOutput } from './actors.ts'
import { partsOf, unbound } from './agent-parts.ts'
import type { AgentContext, AgentInput, AgentMachineEvent, AgentOutput, CurrentCall } from './context.ts'
import { createContext, runOutput } from './create-context.ts'
import { decisionApproves, decisionFits, machineGuards } from './guards.ts'
import { askForValidAnswer, createOutputGuards, failWithInvalidAnswer } from './output-check.ts'
import { resumeWait, startWait, type WaitName } from './waits.ts'
import { workerActor, workerOf } from './worker.ts'

/** Every named guard, made once: each asks the run's own agent. */
const guards = {
  ...machineGuards(partsOf),
  ...createOutputGuards((context) => partsOf(context).runtime),
}

/** The entry of a wait state: its work starts (its exit, `stopWork`, stops it). */
const work = (wait: WaitName) => ({ type: 'startWork' as const, params: wait })

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
    // A cancel ends the run: the work's signal says so (a person's wait is then withdrawn, even a stored run's).
    stopWork: ({ system, event }) =>
      workerOf(system)?.stop(
        event.type === 'agent.cancel'
          ? new RunCancelledError(event.reason ?? 'cancelled by request', event.by !== undefined ? { by: event.by } : {})
          : undefined,
      ),
    emitRunStart: ({ context }) => partsOf(context).act.emitRunStart(context),
    emitTurnStart: ({ context }) => partsOf(context).act.emitTurnStart(context),
    emitModelRequest: ({ context }) => partsOf(context).act.emitModelRequest(context),
    emitTurnEnd: ({ context }) => partsOf(context).act.emitTurnEnd(context),
    emitRunError: ({ context }) => partsOf(context).act.emitRunError(context),
    emitRunEnd: ({ context }) => partsOf(context).act.emitRunEnd(context),
    emitModelResponse: ({ context }, output: ProviderResponse & { durationMs: number }) =>
      partsOf(context).act.emitModelResponse(context, output),
    startTool: assign(({ context }) => partsOf(context).act.startTool(context)),
    cancel: assign(({ context }, params: { reason: string | undefined }) =>
      partsOf(context).act.cancel(params.reason ?? 'cancelled by request'),
    ),
    stopAtLimit: assign(({ context }, limit: TurnLimit) => partsOf(context).act.stopAtLimit(context, limit)),
    stopByHook: assign(({ context }, params: { reason: string | undefined }) =>
      partsOf(context).act.cancel(`stopped by beforeTurn hook: ${params.reason ?? ''}`, 'hook_stop'),
    ),
    failWithHookError: assign(({ context }, { error }: { error: unknown }) => partsOf(context).act.failWithHookError(error)),
    failWithRuleError: assign(({ context }, { error }: { error: unknown }) => partsOf(context).act.failWithRuleError(error)),
    queueSteering: assign(({ context }, steer: { text: string; from?: string | undefined }) =>
      partsOf(context).act.queueSteering(context, steer),
    ),
    resetModelCall: assign({ model: ({ context }) => ({ ...context.model, attempt: 1, outgoing: undefined }) }),
    sendRewritten: assign({
      model: ({ context }, outgoing: AgentContext['model']['outgoing']) => ({ ...context.model, attempt: 1, outgoing }),
    }),
    acceptReply: assign(({ context }, response: ProviderResponse) => partsOf(context).act.acceptReply(context, response)),
    scheduleModelRetry: assign(({ context }, { error }: { error: unknown }) =>
      partsOf(context).act.scheduleModelRetry(context, error),
    ),
    nextAttempt: assign({ model: ({ context }) => ({ ...context.model, attempt: context.model.attempt + 1 }) }),
    failWithProviderError: assign(({ context }, { error }: { error: unknown }) =>
      partsOf(context).act.failWithProviderError(context, error),
    ),
    openCall: assign(({ context }) => partsOf(context).act.openCall(context)),
    handedOver: assign(({ context }) => partsOf(context).act.handedOver(context)),
    applySteering: assign(({ context }) => partsOf(context).act.applySteering(context)),
    callInvalid: assign(({ context }) => partsOf(context).act.callInvalid(context)),
    gated: assign(({ context }, gate: ToolGate) => partsOf(context).act.gated(context, gate)),
    openApproval: assign(({ context }) => partsOf(context).act.openApproval(context)),
    approvalDecided: assign(({ context }, decision: ApprovalDecision) => partsOf(context).act.approvalDecided(context, decision)),
    approvalTimedOut: assign(({ context }) => partsOf(context).act.approvalTimedOut(context)),
    approvalUnavailable: assign(({ context }, reason: string) => partsOf(context).act.approvalUnavailable(context, reason)),
    rejectDecision: ({ context }, rejected: { decision: unknown; reason?: string }) =>
      partsOf(context).act.rejectDecision(context, rejected),
    acceptToolOutput: assign(({ context }, output: ToolRunOutput) => partsOf(context).act.acceptToolOutput(context, output)),
    failWithToolError: assign(({ context }, { error }: { error: unknown }) => partsOf(context).act.failWithToolError(error)),
    toolFailed: assign(({ context }, { error }: { error: unknown }) => partsOf(context).act.toolFailed(context, error)),
    rewritten: assign(({ context }, rewrite: { output: string; isError: boolean }) =>
      partsOf(context).act.rewritten(context, rewrite),
    ),
    recordToolResult: assign(({ context }) => partsOf(context).act.recordToolResult(context)),
    startTurn: assign(({ context }) => partsOf(context).act.startTurn(context)),
    acceptReplyAndOpen: assign(({ context }, response: ProviderResponse) =>
      partsOf(context).act.acceptReplyAndOpen(context, response),
    ),
    finishCall: assign(({ context }, output: ToolRunOutput) => partsOf(context).act.finishCall(context, output)),
    finishRewritten: assign(({ context }, rewrite: { output: string; isError: boolean }) =>
      partsOf(context).act.finishRewritten(context, rewrite),
    ),
    nextTurn: assign(({ context }, announce: boolean) => partsOf(context).act.nextTurn(context, announce)),
    finishStep: assign(({ context }, output: ToolRunOutput) => partsOf(context).act.finishStep(context, output)),
    finishWithHandoff: assign({ output: '', stopReason: 'handoff' }),
    askForValidAnswer: assign(({ context }) => askForValidAnswer(context, partsOf(context).runtime)),
    failWithInvalidAnswer: assign(({ context }) => failWithInvalidAnswer(context, partsOf(context).runtime)),
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
                      isRetryable(event.error) && context.model.attempt < partsOf(context).runtime.retry.maxAttempts,
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
                          !editedArgumentsRejected(
                            partsOf(context).runtime.tools.get((context.current as CurrentCall).toolName),
                            event.decision,
                          ),
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
                  entry: ['startTool', work('executingTool')],
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
                        guard: ({ event }) => FatalToolError.is(event.error),
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

import { assign, setup } from 'xstate'
import { RunCancelledError } from '../errors.ts'
import { createActionTable } from './action-table.ts'
import { partsOf, workerOf } from './agent-parts.ts'
import type { AgentContext, AgentInput, AgentMachineEvent, AgentOutput } from './context.ts'
import { createContext, runOutput } from './create-context.ts'
import { decision, machineGuards } from './guards.ts'
import { createOutputGuards } from './output-check.ts'
import { intoNextTurn, TURN } from './routes.ts'
import { failure, modelReply, outputOf, rewrite, startWait, toolOutput, type WaitName } from './waits.ts'

/** The entry of a wait state: its work starts (its exit, `stopWork`, stops it). */
const work = (wait: WaitName) => ({ type: 'startWork' as const, params: wait })

/**
 * The agent loop as a statechart, one machine for every agent. States are the loop's phases and
 * its five hook points; every wait (hook, model, reviewer, tool) is a state whose work the run's
 * worker starts on entry and aborts on exit (its signal), so leaving the state (cancel, steering,
 * timeout) stops the work.
 *
 * A hook state with no hook registered is passed through in the same macrostep (an eventless
 * transition), so an agent pays only for the hooks it has. Where each wait's exit goes is asked of
 * routes.ts (one route per exit: after the model, after a tool, after the turn); the guards and
 * actions named here live beside this file (guards.ts, actions.ts); this one is the picture of the
 * loop. `docs/loop.md`'s diagram is generated from it.
 */
export const agentMachine = setup({
  types: {
    context: {} as AgentContext,
    events: {} as AgentMachineEvent,
    input: {} as AgentInput,
    output: {} as AgentOutput,
  },
  guards: {
    ...machineGuards(partsOf),
    ...createOutputGuards((context) => partsOf(context).runtime),
  },
  actions: {
    // Every action of `MachineActions`, by its name, on the run's own agent.
    ...createActionTable((context) => partsOf(context).act),
    startWork: ({ context }, wait: WaitName) => startWait(workerOf(context), wait, context),
    // A cancel ends the run: the work's signal says so (a person's wait is then withdrawn, even a stored run's).
    stopWork: ({ context, event }) =>
      workerOf(context).stop(
        event.type === 'agent.cancel'
          ? new RunCancelledError(event.reason ?? 'cancelled by request', event.by !== undefined ? { by: event.by } : {})
          : undefined,
      ),
  },
}).createMachine({
  id: 'agent',
  description: 'One run of a signalbox agent: call the model, run the tools it asks for, feed results back, repeat.',
  context: ({ input }) => createContext(input),
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
                // maxTurns, the token budget or the run's budget (turn-limit.ts).
                { guard: { type: 'turnStarts', params: 'limit' }, target: '#agent.failed', actions: 'stopAtLimit' },
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
                    guard: 'hookStopsRun',
                    target: '#agent.cancelled',
                    actions: {
                      type: 'stopByHook',
                      params: ({ event }) => ({ reason: outputOf('runningBeforeTurn', event)?.reason }),
                    },
                  },
                  // Straight to the next hook's wait: each pass-through state costs XState a microstep.
                  { guard: 'hasBeforeProviderCall', target: 'runningBeforeProviderCall', actions: 'emitTurnStart' },
                  { target: 'callingModel', actions: ['emitTurnStart', 'resetModelCall'] },
                ],
                'work.error': {
                  target: '#agent.failed',
                  actions: { type: 'failWithHookError', params: failure },
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
                'work.done': {
                  target: 'callingModel',
                  actions: { type: 'sendRewritten', params: ({ event }) => outputOf('runningBeforeProviderCall', event) },
                },
                'work.error': {
                  target: '#agent.failed',
                  actions: { type: 'failWithHookError', params: failure },
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
                  // Straight to where the reply's first call goes, opened with the reply.
                  {
                    guard: { type: 'modelAnswered', params: 'call-runs' },
                    target: 'toolCalls.executingTool',
                    actions: [
                      { type: 'acceptReplyAndOpen', params: modelReply },
                      { type: 'emitModelResponse', params: modelReply },
                    ],
                  },
                  {
                    guard: { type: 'modelAnswered', params: 'call-to-hook' },
                    target: 'toolCalls.runningBeforeToolExecution',
                    actions: [
                      { type: 'acceptReplyAndOpen', params: modelReply },
                      { type: 'emitModelResponse', params: modelReply },
                    ],
                  },
                  {
                    guard: { type: 'modelAnswered', params: 'tool-calls' },
                    target: 'toolCalls',
                    actions: [
                      { type: 'acceptReply', params: modelReply },
                      { type: 'emitModelResponse', params: modelReply },
                    ],
                  },
                  {
                    target: 'afterTurn',
                    actions: [
                      { type: 'acceptReply', params: modelReply },
                      { type: 'emitModelResponse', params: modelReply },
                    ],
                  },
                ],
                'work.error': [
                  { guard: 'modelRetryable', target: 'waitingToRetry', actions: { type: 'scheduleModelRetry', params: failure } },
                  { target: '#agent.failed', actions: { type: 'failWithProviderError', params: failure } },
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
                    // The reply's calls are done: no afterTurn hook, no hand-off: straight into the next turn.
                    ...intoNextTurn('callsDone'),
                    { guard: { type: 'callsDone', params: 'after-turn-hook' }, target: `${TURN}.runningAfterTurn` },
                    { guard: { type: 'callsDone', params: 'turn-end' }, target: `${TURN}.afterTurn` },
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
                        guard: 'hookDecidedCall',
                        target: 'afterToolExecution',
                        actions: { type: 'gated', params: ({ event }) => outputOf('runningBeforeToolExecution', event) },
                      },
                      { guard: 'callRunsAtOnce', target: 'executingTool' },
                      { target: 'approvalCheck' },
                    ],
                    'work.error': {
                      target: '#agent.failed',
                      actions: { type: 'failWithHookError', params: failure },
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
                      { guard: 'ruleAsksPerson', target: 'awaitingApproval', actions: 'openApproval' },
                      { target: 'executingTool' },
                    ],
                    'work.error': {
                      target: '#agent.failed',
                      actions: { type: 'failWithRuleError', params: failure },
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
                      // An approval with edited arguments the tool rejects does not run (the next branch refuses it).
                      {
                        guard: 'decisionApproves',
                        target: 'executingTool',
                        actions: { type: 'approvalDecided', params: decision },
                      },
                      {
                        guard: 'decisionFits',
                        target: 'afterToolExecution',
                        actions: { type: 'approvalDecided', params: decision },
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
                      // The reply's last call, nothing between it and the next turn: straight there.
                      ...intoNextTurn('toolAnswered', true),
                      {
                        guard: { type: 'toolAnswered', params: 'after-tool-hook' },
                        target: 'runningAfterToolExecution',
                        actions: { type: 'acceptToolOutput', params: toolOutput },
                      },
                      // No hook: the result joins the transcript now (one microstep less per step).
                      { target: 'nextCall', actions: { type: 'finishCall', params: toolOutput } },
                    ],
                    'work.error': [
                      // A supervisor giving up on a child (or any fatal tool failure) ends the run.
                      {
                        guard: 'toolFailedFatally',
                        target: '#agent.failed',
                        actions: { type: 'failWithToolError', params: failure },
                      },
                      { target: 'afterToolExecution', actions: { type: 'toolFailed', params: failure } },
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
                        target: `${TURN}.runningAfterTurn`,
                        actions: { type: 'finishRewritten', params: rewrite },
                      },
                      { target: 'nextCall', actions: { type: 'finishRewritten', params: rewrite } },
                    ],
                    'work.error': {
                      target: '#agent.failed',
                      actions: { type: 'failWithHookError', params: failure },
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
                'work.done': [...intoNextTurn('turnDone'), { target: 'turnEnd' }],
                'work.error': {
                  target: '#agent.failed',
                  actions: { type: 'failWithHookError', params: failure },
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

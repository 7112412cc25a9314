import { assign, setup } from 'xstate'
import { formatDuration } from '../duration.ts'
import {
  BudgetExceededError,
  FatalToolError,
  HookError,
  MaxTurnsExceededError,
  RunCancelledError,
  serializeError,
} from '../errors.ts'
import { type AgentEvent, deepFreeze, type ToolOutcome } from '../events.ts'
import { callDigest } from '../hitl/digest.ts'
import { approveEdited, checkEditedArguments, editedArgumentsRejected, noteEditedArguments } from '../hitl/edited-arguments.ts' // EDITED-ARGUMENTS
import type { ApprovalDecision, ApprovalRequest, AuditEntry } from '../hitl/types.ts'
import type { ToolGate } from '../hooks.ts'
import { addUsage, emptyUsage, type Message, type ToolCall, type ToolMessage } from '../messages.ts'
import type { ProviderResponse } from '../provider/provider.ts'
import { createAgentActors, eventFields, isRetryable, type ToolRunOutput } from './actors.ts'
import type { AgentContext, AgentInput, AgentMachineEvent, AgentOutput, CurrentCall } from './context.ts'
import type { AgentRuntime } from './runtime.ts'

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never
type EventBody = DistributiveOmit<AgentEvent, 'agentId' | 'runId' | 'runPath' | 'agentPath' | 'parentRunId' | 'at'>

/**
 * The agent loop as a statechart. States are the loop's phases and its five hook points; every
 * wait (hook, model, reviewer, tool) is an invoked actor inside a state, so leaving the state
 * (cancel, steering, timeout) stops the work and aborts its signal.
 *
 * A hook state with no hook registered is passed through in the same macrostep (an eventless
 * transition), so an agent pays only for the hooks it has.
 */
export function createAgentMachine(runtime: AgentRuntime) {
  const { clock } = runtime
  const preparedCalls = new WeakMap<ToolCall, Pick<CurrentCall, 'args' | 'invalid'>>()
  const emit = (context: AgentContext, body: EventBody) => {
    if (!runtime.events.has(body.type)) return
    runtime.events.emit({ ...eventFields(context), at: clock.now(), ...body } as AgentEvent)
  }
  const audit = (context: AgentContext, entry: Omit<AuditEntry, 'agentId' | 'runId' | 'runPath'>) =>
    runtime.recordAudit({ agentId: context.run.agentId, runId: context.run.runId, runPath: context.run.runPath, ...entry })

  /** Who decided what on a request, and what they were shown (the exact call). */
  const auditApproval = (
    context: AgentContext,
    request: ApprovalRequest,
    outcome: { kind: AuditEntry['kind']; decision: string; reason: string | undefined; actor: string; decidedAt: number },
    extra: Partial<AuditEntry> = {}, // EDITED-ARGUMENTS
  ) =>
    audit(context, {
      kind: outcome.kind,
      callId: request.callId,
      toolName: request.toolName,
      shown: request.arguments,
      digest: request.digest,
      decision: outcome.decision,
      ...(outcome.reason === undefined ? {} : { reason: outcome.reason }),
      actor: outcome.actor,
      requestedAt: request.requestedAt,
      decidedAt: outcome.decidedAt,
      latencyMs: outcome.decidedAt - request.requestedAt,
      ...extra, // EDITED-ARGUMENTS
    })

  const setResult = (context: AgentContext, result: NonNullable<CurrentCall['result']>): Partial<AgentContext> => ({
    current: context.current ? { ...context.current, result } : undefined,
  })

  return setup({
    types: {
      context: {} as AgentContext,
      events: {} as AgentMachineEvent,
      input: {} as AgentInput,
      output: {} as AgentOutput,
    },
    actors: createAgentActors(runtime),
    guards: {
      hasBeforeTurn: () => runtime.hooks.has('beforeTurn'),
      hasBeforeProviderCall: () => runtime.hooks.has('beforeProviderCall'),
      hasBeforeToolExecution: () => runtime.hooks.has('beforeToolExecution'),
      hasAfterToolExecution: () => runtime.hooks.has('afterToolExecution'),
      hasAfterTurn: () => runtime.hooks.has('afterTurn'),
      turnLimitReached: ({ context }) => context.turn > context.run.maxTurns,
      tokenBudgetSpent: ({ context }) =>
        context.run.maxTokens !== undefined && context.usage.totalTokens >= context.run.maxTokens,
      externalBudgetSpent: ({ context }) => runtime.budgetChecks.get(context.run.runId)?.() !== undefined,
      handoffRequested: ({ context }) => context.handoff !== undefined,
      nextCallGoesToHook: ({ context }) => {
        if (context.handoff || context.steering.length > 0 || context.batchSteered) return false
        if (!runtime.hooks.has('beforeToolExecution')) return false
        const call = context.calls[context.callIndex]
        return call !== undefined && prepareCall(call).invalid === undefined
      },
      currentRunsAtOnce: ({ context }) =>
        context.steering.length === 0 &&
        !context.batchSteered &&
        context.current !== undefined &&
        !runtime.tools.get(context.current.toolName)?.needsApproval,
      nextCallRunsAtOnce: ({ context }) => {
        if (context.handoff || context.steering.length > 0 || context.batchSteered) return false
        if (runtime.hooks.has('beforeToolExecution')) return false
        const call = context.calls[context.callIndex]
        if (!call) return false
        const prepared = prepareCall(call)
        return prepared.invalid === undefined && !runtime.tools.get(call.function.name)?.needsApproval
      },
      replyHasToolCalls: ({ context }) => context.calls.length > 0,
      allCallsHandled: ({ context }) => context.callIndex >= context.calls.length,
      steeringPending: ({ context }) => context.steering.length > 0 || context.batchSteered,
      callIsInvalid: ({ context }) => context.current?.invalid !== undefined,
      approvalAlways: ({ context }) => {
        const rule = context.current ? runtime.tools.get(context.current.toolName)?.needsApproval : undefined
        return rule === true
      },
      approvalByRule: ({ context }) => {
        const rule = context.current ? runtime.tools.get(context.current.toolName)?.needsApproval : undefined
        return typeof rule === 'function'
      },
    },
    actions: {
      queueSteering: assign(({ context, event }) => {
        const { text, from = 'user' } = event as Extract<AgentMachineEvent, { type: 'agent.steer' }>
        emit(context, { type: 'steering.queued', text, from })
        return { steering: [...context.steering, { text, from, at: clock.now() }] }
      }),
      acceptReply: assign(({ context, event }) =>
        acceptReply(context, (event as unknown as { output: ProviderResponse }).output),
      ),
      emitModelResponse: ({ context, event }) => {
        const output = (event as unknown as { output: ProviderResponse & { durationMs: number } }).output
        emit(context, {
          type: 'model.response',
          turn: context.turn,
          message: output.message,
          finishReason: output.finishReason,
          ...(output.usage ? { usage: output.usage } : {}),
          durationMs: output.durationMs,
        })
      },
      resetModelCall: assign({ model: ({ context }) => ({ ...context.model, attempt: 1, outgoing: undefined }) }),
      acceptToolOutput: assign(({ context, event }) => {
        const output = (event as unknown as { output: ToolRunOutput }).output
        return {
          ...setResult(context, {
            output: noteEditedArguments(context.current, output.output),
            isError: false,
            outcome: 'executed',
          }), // EDITED-ARGUMENTS
          ...(output.handoff ? { handoff: output.handoff } : {}),
        }
      }),
      emitTurnStart: ({ context }) => emit(context, { type: 'turn.start', turn: context.turn }),
      emitTurnEnd: ({ context }) => emit(context, { type: 'turn.end', turn: context.turn, toolCalls: context.calls.length }),
      emitRunError: ({ context }) => {
        if (context.error) emit(context, { type: 'run.error', error: context.error })
      },
      emitRunEnd: ({ context }) =>
        emit(context, {
          type: 'run.end',
          status: context.status as 'done' | 'failed' | 'cancelled',
          ...(context.output === undefined ? {} : { output: context.output }),
          ...(context.error ? { error: context.error } : {}),
          turns: context.turn,
          usage: context.usage,
        }),
      failWithHookError: assign(({ event }) => {
        const error = (event as { error?: unknown }).error
        return {
          error: serializeError(error instanceof HookError ? error : new HookError('unknown', error)),
          stopReason: 'hook_error' as const,
        }
      }),
      applySteering: assign(({ context }) => {
        const call = context.current as CurrentCall
        const items = context.steering
        if (items.length === 0) {
          // cancel-batch: an earlier call of this reply already carried the correction.
          return setResult(context, {
            output: 'Cancelled: a correction from the person replaced the remaining calls of this reply.',
            isError: false,
            outcome: 'steered',
          })
        }
        const text = items.map((item) => item.text).join('\n')
        const from = [...new Set(items.map((item) => item.from))].join(', ')
        emit(context, { type: 'steering.applied', callId: call.callId, toolName: call.toolName, text, from })
        const now = clock.now()
        for (const item of items) {
          audit(context, {
            kind: 'steering.applied',
            callId: call.callId,
            toolName: call.toolName,
            shown: { toolName: call.toolName, arguments: call.rawArguments },
            decision: item.text,
            actor: item.from,
            requestedAt: item.at,
            decidedAt: now,
            latencyMs: now - item.at,
          })
        }
        return {
          ...setResult(context, { output: `Cancelled. The person says: ${text}`, isError: false, outcome: 'steered' }),
          steering: [],
          batchSteered: runtime.steeringPolicy === 'cancel-batch',
        }
      }),
      openApproval: assign(({ context }) => {
        const call = context.current as CurrentCall
        const now = clock.now()
        const request: ApprovalRequest = {
          requestId: runtime.ids('request'),
          agentId: context.run.agentId,
          runId: context.run.runId,
          runPath: context.run.runPath,
          ...(context.run.agentPath.length > 0 ? { agentPath: context.run.agentPath } : {}),
          callId: call.callId,
          toolName: call.toolName,
          arguments: call.args,
          digest: callDigest(call.toolName, call.args),
          deadline: now + runtime.approvalTimeoutMs,
          requestedAt: now,
        }
        emit(context, { type: 'approval.requested', request })
        return { current: { ...call, approval: request } }
      }),
      approvalDecided: assign(({ context, event }) => {
        const decision = (event as { decision: ApprovalDecision }).decision
        const request = context.current?.approval as ApprovalRequest
        const edit = checkEditedArguments(runtime.tools.get(request.toolName), decision) // EDITED-ARGUMENTS
        if (edit.kind !== 'none') return approveEdited({ context, request, decision, edit, emit, auditApproval, setResult }) // EDITED-ARGUMENTS
        const latencyMs = decision.decidedAt - request.requestedAt
        emit(context, { type: 'approval.decided', request, decision, latencyMs })
        auditApproval(context, request, {
          kind: decision.approved ? 'approval.granted' : 'approval.denied',
          decision: decision.approved ? 'approved' : 'denied',
          reason: decision.reason,
          actor: decision.reviewer,
          decidedAt: decision.decidedAt,
        })
        if (decision.approved) return {}
        const why = decision.reason ? `: ${decision.reason.trim().replace(/[.!?]*$/, '')}` : ' (no reason given)'
        return setResult(context, {
          output: `Denied by ${decision.reviewer}${why}. The call "${request.toolName}" was not executed.`,
          isError: true,
          outcome: 'approval_denied',
        })
      }),
      approvalTimedOut: assign(({ context }) => {
        const request = context.current?.approval as ApprovalRequest
        emit(context, { type: 'approval.timeout', request })
        auditApproval(context, request, {
          kind: 'approval.timeout',
          decision: 'timeout',
          reason: 'no decision before the deadline; the safe default is to deny',
          actor: 'system',
          decidedAt: clock.now(),
        })
        return setResult(context, {
          output: `Not executed: nobody approved "${request.toolName}" within ${formatDuration(request.deadline - request.requestedAt)}, so it was denied by default. Ask the person, or choose another action.`,
          isError: true,
          outcome: 'approval_timeout',
        })
      }),
      approvalUnavailable: assign(({ context, event }) => {
        const reason = (event as { reason: string }).reason
        const request = context.current?.approval as ApprovalRequest
        emit(context, { type: 'approval.unavailable', request, reason })
        auditApproval(context, request, {
          kind: 'approval.unavailable',
          decision: 'unavailable',
          reason: `no reviewer could decide: ${reason}`,
          actor: 'system',
          decidedAt: clock.now(),
        })
        return setResult(context, {
          output: `Not executed: "${request.toolName}" needs a person's approval and no reviewer could decide (${reason}). It was denied by default.`,
          isError: true,
          outcome: 'approval_timeout',
        })
      }),
      recordToolResult: assign(({ context }) => {
        const call = context.current as CurrentCall
        const result = call.result ?? { output: '', isError: false, outcome: 'executed' as ToolOutcome }
        const message: ToolMessage = Object.freeze({ role: 'tool', tool_call_id: call.callId, content: result.output })
        emit(context, {
          type: 'tool.end',
          callId: call.callId,
          toolName: call.toolName,
          output: result.output,
          isError: result.isError,
          outcome: result.outcome,
          durationMs: clock.now() - call.startedAt,
        })
        return {
          messages: [...context.messages, message],
          toolResults: [...context.toolResults, message],
          callIndex: context.callIndex + 1,
          current: undefined,
        }
      }),
    },
    delays: {
      approvalDeadline: ({ context }) => Math.max(0, (context.current?.approval?.deadline ?? 0) - clock.now()),
      retryDelay: ({ context }) => context.model.retryDelayMs,
    },
  }).createMachine({
    id: 'agent',
    description: 'One run of a signalbox agent: call the model, run the tools it asks for, feed results back, repeat.',
    context: ({ input }) => createContext(input),
    initial: 'idle',
    output: ({ context }) => ({
      status:
        context.status === 'done' || context.status === 'failed' || context.status === 'cancelled' ? context.status : 'failed',
      output: context.output,
      error: context.error,
      stopReason: context.stopReason,
      turns: context.turn,
      usage: context.usage,
      messages: context.messages,
      pendingSteering: context.steering,
      handoff: context.handoff,
    }),
    states: {
      idle: {
        description: 'Created, not started.',
        on: {
          'agent.start': {
            target: 'running',
            actions: ({ context }) => emit(context, { type: 'run.start', input: context.run.input }),
          },
          // E.g. `run(input, { signal })` with a signal that was already aborted.
          'agent.cancel': {
            target: 'cancelled',
            actions: assign({
              stopReason: 'cancelled',
              error: ({ event }) => serializeError(new RunCancelledError(event.reason ?? 'cancelled by request')),
            }),
          },
        },
      },
      running: {
        description: 'The loop. A correction can be queued at any time; cancel ends the run and aborts its work.',
        initial: 'turn',
        on: {
          'agent.cancel': {
            target: 'cancelled',
            actions: assign({
              stopReason: 'cancelled',
              error: ({ event }) => serializeError(new RunCancelledError(event.reason ?? 'cancelled by request')),
            }),
          },
          'agent.steer': { actions: 'queueSteering' },
          // A decision that arrives when no approval is pending is late: record it, never apply it.
          'approval.decision': {
            actions: ({ context, event }) =>
              rejectDecision(context, event.decision, 'no approval is pending (late or duplicate decision)'),
          },
        },
        states: {
          turn: {
            description: 'One trip round the loop: the model, then the tools it asked for.',
            initial: 'beforeTurn',
            entry: [
              assign({
                turn: ({ context }) => context.turn + 1,
                calls: [],
                callIndex: 0,
                toolResults: [],
                reply: undefined,
                model: ({ context }) => ({ ...context.model, finishReason: undefined }),
                batchSteered: false,
              }),
            ],
            states: {
              beforeTurn: {
                description: 'Hook point: check a budget, log the turn, or stop the run.',
                tags: ['hook'],
                always: [
                  {
                    guard: 'turnLimitReached',
                    target: '#agent.failed',
                    actions: assign({
                      turn: ({ context }) => context.turn - 1,
                      stopReason: 'max_turns',
                      error: ({ context }) => serializeError(new MaxTurnsExceededError(context.run.maxTurns)),
                    }),
                  },
                  {
                    guard: 'tokenBudgetSpent',
                    target: '#agent.failed',
                    actions: assign({
                      turn: ({ context }) => context.turn - 1,
                      stopReason: 'max_tokens',
                      error: ({ context }) =>
                        serializeError(
                          new BudgetExceededError(
                            `The run used ${context.usage.totalTokens} tokens; its budget is ${context.run.maxTokens}.`,
                            { maxTokens: context.run.maxTokens, used: context.usage.totalTokens },
                          ),
                        ),
                    }),
                  },
                  {
                    guard: 'externalBudgetSpent',
                    target: '#agent.failed',
                    actions: assign({
                      turn: ({ context }) => context.turn - 1,
                      stopReason: 'budget',
                      error: ({ context }) => {
                        const spent = runtime.budgetChecks.get(context.run.runId)?.() ?? {
                          code: 'BUDGET_EXCEEDED',
                          message: 'The budget is spent.',
                        }
                        return { code: spent.code, message: spent.message, fault: 'user' as const }
                      },
                    }),
                  },
                  { guard: { type: 'hasBeforeTurn' }, target: 'runningBeforeTurn' },
                  { guard: 'hasBeforeProviderCall', target: 'beforeProviderCall', actions: 'emitTurnStart' },
                  { target: 'callingModel', actions: ['emitTurnStart', 'resetModelCall'] },
                ],
              },
              runningBeforeTurn: {
                description: 'Hook point beforeTurn: waiting for the hooks.',
                tags: ['hook', 'wait'],
                invoke: {
                  src: 'beforeTurnHook',
                  input: ({ context }) => context,
                  onDone: [
                    {
                      guard: ({ event }) => event.output?.stop === true,
                      target: '#agent.cancelled',
                      actions: assign({
                        stopReason: 'hook_stop',
                        error: ({ event }) =>
                          serializeError(new RunCancelledError(`stopped by beforeTurn hook: ${event.output?.reason ?? ''}`)),
                      }),
                    },
                    // Through the hook point's state, so every state of the chart is one a run can be in.
                    { guard: 'hasBeforeProviderCall', target: 'beforeProviderCall', actions: 'emitTurnStart' },
                    { target: 'callingModel', actions: ['emitTurnStart', 'resetModelCall'] },
                  ],
                  onError: { target: '#agent.failed', actions: 'failWithHookError' },
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
                invoke: {
                  src: 'beforeProviderCallHook',
                  input: ({ context }) => context,
                  onDone: {
                    target: 'callingModel',
                    actions: assign({
                      model: ({ context, event }) => ({ ...context.model, attempt: 1, outgoing: event.output }),
                    }),
                  },
                  onError: { target: '#agent.failed', actions: 'failWithHookError' },
                },
              },
              callingModel: {
                description: 'Waiting for the model (streaming). Transient errors are retried with backoff.',
                tags: ['wait', 'model'],
                entry: ({ context }) => {
                  if (!runtime.events.has('model.request')) return
                  const sent = context.model.outgoing ?? { messages: context.messages, tools: runtime.toolSpecs }
                  emit(context, {
                    type: 'model.request',
                    turn: context.turn,
                    attempt: context.model.attempt,
                    messages: sent.messages,
                    tools: sent.tools.map((t) => t.name),
                  })
                },
                invoke: {
                  src: 'callModel',
                  input: ({ context }) => ({
                    turn: context.turn,
                    messages: context.model.outgoing?.messages ?? context.messages,
                    tools: context.model.outgoing?.tools ?? runtime.toolSpecs,
                    base: eventFields(context),
                  }),
                  // Routed here rather than through a pass-through state: each microstep costs
                  // XState a snapshot, and this runs once per tool step (see BENCHMARKS.md).
                  onDone: [
                    {
                      guard: ({ event }) => (event.output.message.tool_calls?.length ?? 0) > 0,
                      target: 'toolCalls',
                      actions: ['acceptReply', 'emitModelResponse'],
                    },
                    { target: 'afterTurn', actions: ['acceptReply', 'emitModelResponse'] },
                  ],
                  onError: [
                    {
                      guard: ({ context, event }) =>
                        isRetryable(event.error) && context.model.attempt < runtime.retry.maxAttempts,
                      target: 'waitingToRetry',
                      actions: [
                        assign({
                          model: ({ context, event }) => ({
                            ...context.model,
                            lastError: serializeError(event.error),
                            retryDelayMs: retryDelay(runtime, context.model.attempt, event.error),
                          }),
                        }),
                        ({ context }) =>
                          emit(context, {
                            type: 'model.retry',
                            turn: context.turn,
                            attempt: context.model.attempt,
                            delayMs: context.model.retryDelayMs,
                            error: context.model.lastError ?? { code: 'UNKNOWN_ERROR', message: '' },
                          }),
                      ],
                    },
                    {
                      target: '#agent.failed',
                      actions: assign({
                        error: ({ event }) => serializeError(event.error),
                        stopReason: 'provider_error',
                        model: ({ context }) => ({ ...context.model, outgoing: undefined }),
                      }),
                    },
                  ],
                },
              },
              waitingToRetry: {
                description: 'Backing off before calling the model again.',
                tags: ['wait'],
                after: {
                  retryDelay: {
                    target: 'callingModel',
                    actions: assign({ model: ({ context }) => ({ ...context.model, attempt: context.model.attempt + 1 }) }),
                  },
                },
              },
              toolCalls: {
                description: 'One pass per tool call the model asked for, in order.',
                initial: 'nextCall',
                states: {
                  nextCall: {
                    description: 'Takes the next tool call of the reply, in order, or ends the pass.',
                    always: [
                      {
                        // Fast path: no afterTurn hook, no hand-off: straight into the next turn.
                        guard: ({ context }) =>
                          context.callIndex >= context.calls.length && !runtime.hooks.has('afterTurn') && !context.handoff,
                        target: '#agent.running.turn',
                        reenter: true,
                        actions: 'emitTurnEnd',
                      },
                      {
                        guard: ({ context }) => context.callIndex >= context.calls.length && runtime.hooks.has('afterTurn'),
                        target: '#agent.running.turn.runningAfterTurn',
                      },
                      { guard: 'allCallsHandled', target: '#agent.running.turn.afterTurn' },
                      {
                        // A valid call, no correction: straight to the beforeToolExecution hook.
                        guard: 'nextCallGoesToHook',
                        target: 'runningBeforeToolExecution',
                        actions: assign(({ context }) => ({ current: openCall(context) })),
                      },
                      {
                        // Fast path: a valid call that needs no hook, approval or correction runs at once.
                        guard: 'nextCallRunsAtOnce',
                        target: 'executingTool',
                        actions: assign(({ context }) => ({ current: openCall(context) })),
                      },
                      { target: 'steeringCheck', actions: assign(({ context }) => ({ current: openCall(context) })) },
                    ],
                  },
                  steeringCheck: {
                    description: 'A queued correction cancels this call; the model reads the correction instead.',
                    always: [
                      {
                        guard: 'handoffRequested',
                        target: 'afterToolExecution',
                        actions: assign(({ context }) =>
                          setResult(context, {
                            output: `Not executed: the conversation was handed over to "${context.handoff?.to}".`,
                            isError: false,
                            outcome: 'steered',
                          }),
                        ),
                      },
                      { guard: 'steeringPending', target: 'afterToolExecution', actions: 'applySteering' },
                      { target: 'validatingArguments' },
                    ],
                  },
                  validatingArguments: {
                    description: 'Unknown tool or arguments that fail the schema: the tool does not run.',
                    always: [
                      {
                        guard: 'callIsInvalid',
                        target: 'afterToolExecution',
                        actions: assign(({ context }) => {
                          const invalid = context.current?.invalid
                          return setResult(context, {
                            output: invalid?.message ?? 'Invalid call.',
                            isError: true,
                            outcome: invalid?.outcome ?? 'invalid_arguments',
                          })
                        }),
                      },
                      { target: 'beforeToolExecution' },
                    ],
                  },
                  beforeToolExecution: {
                    description: 'Hook point: allow the call, deny it with a reason, or answer it with a ready result.',
                    tags: ['hook'],
                    always: [
                      { guard: 'hasBeforeToolExecution', target: 'runningBeforeToolExecution' },
                      { target: 'approvalCheck' },
                    ],
                  },
                  runningBeforeToolExecution: {
                    description: 'Hook point beforeToolExecution: waiting for the hooks.',
                    tags: ['hook', 'wait'],
                    invoke: {
                      src: 'beforeToolExecutionHook',
                      input: ({ context }) => context,
                      onDone: [
                        {
                          guard: ({ event }) => event.output.action !== 'allow',
                          target: 'afterToolExecution',
                          actions: assign(({ context, event }) => setResult(context, gateResult(event.output))),
                        },
                        { guard: 'currentRunsAtOnce', target: 'executingTool' },
                        { target: 'approvalCheck' },
                      ],
                      onError: { target: '#agent.failed', actions: 'failWithHookError' },
                    },
                  },
                  approvalCheck: {
                    description: 'Does this call need a person\u2019s yes?',
                    always: [
                      // A correction that arrived while a hook was deciding still beats the call: it has not started.
                      { guard: 'steeringPending', target: 'steeringCheck' },
                      { guard: 'approvalAlways', target: 'awaitingApproval', actions: 'openApproval' },
                      { guard: 'approvalByRule', target: 'evaluatingApprovalRule' },
                      { target: 'executingTool' },
                    ],
                  },
                  evaluatingApprovalRule: {
                    description: 'The tool\u2019s needsApproval predicate looks at the arguments.',
                    invoke: {
                      src: 'evaluateApprovalRule',
                      input: ({ context }) => context,
                      onDone: [
                        { guard: 'steeringPending', target: 'steeringCheck' },
                        { guard: ({ event }) => event.output, target: 'awaitingApproval', actions: 'openApproval' },
                        { target: 'executingTool' },
                      ],
                      onError: {
                        target: '#agent.failed',
                        actions: assign({
                          error: ({ event }) => serializeError(new HookError('needsApproval', event.error)),
                          stopReason: 'hook_error',
                        }),
                      },
                    },
                  },
                  awaitingApproval: {
                    description: 'Waiting for a reviewer\u2019s decision on the exact call. No answer by the deadline: deny.',
                    tags: ['wait', 'human'],
                    invoke: {
                      src: 'requestApproval',
                      input: ({ context }) => ({ request: context.current?.approval as ApprovalRequest }),
                    },
                    after: {
                      approvalDeadline: { target: 'afterToolExecution', actions: 'approvalTimedOut' },
                    },
                    on: {
                      'approval.decision': [
                        {
                          guard: ({ context, event }) =>
                            decisionMatches(context, event.decision) &&
                            (event.decision as ApprovalDecision).approved &&
                            !editedArgumentsRejected(runtime.tools.get(context.current?.toolName ?? ''), event.decision), // EDITED-ARGUMENTS
                          target: 'executingTool',
                          actions: 'approvalDecided',
                        },
                        {
                          guard: ({ context, event }) => decisionMatches(context, event.decision),
                          target: 'afterToolExecution',
                          actions: 'approvalDecided',
                        },
                        {
                          actions: ({ context, event }) =>
                            rejectDecision(context, event.decision, mismatchReason(context, event.decision)),
                        },
                      ],
                      'approval.unavailable': {
                        target: 'afterToolExecution',
                        actions: 'approvalUnavailable',
                      },
                      // A correction while the person is still deciding withdraws the request.
                      'agent.steer': { target: 'steeringCheck', actions: 'queueSteering' },
                    },
                  },
                  executingTool: {
                    description: 'The tool runs (locally or on a remote host). A throw becomes an error result.',
                    tags: ['wait', 'tool'],
                    entry: ({ context }) => {
                      if (!runtime.events.has('tool.start')) return
                      emit(context, {
                        type: 'tool.start',
                        callId: context.current?.callId ?? '',
                        toolName: context.current?.toolName ?? '',
                        // A copy: the event is frozen, and the tool may still change its own arguments.
                        arguments: structuredClone(context.current?.args),
                      })
                    },
                    invoke: {
                      src: 'executeTool',
                      input: ({ context }) => context,
                      onDone: [
                        {
                          guard: 'hasAfterToolExecution',
                          target: 'runningAfterToolExecution',
                          actions: 'acceptToolOutput',
                        },
                        // No hook: the result joins the transcript now (one microstep less per step).
                        { target: 'nextCall', actions: ['acceptToolOutput', 'recordToolResult'] },
                      ],
                      onError: [
                        {
                          // A supervisor giving up on a child (or any fatal tool failure) ends the run.
                          guard: ({ event }) => event.error instanceof FatalToolError,
                          target: '#agent.failed',
                          actions: assign({
                            error: ({ event }) => serializeError(event.error),
                            stopReason: 'tool_fatal',
                          }),
                        },
                        {
                          target: 'afterToolExecution',
                          actions: assign(({ context, event }) => {
                            const error = serializeError(event.error)
                            const timeout = error.code === 'TIMEOUT' || error.code === 'TOOL_TIMEOUT'
                            return setResult(context, {
                              output: `Error: ${error.message}`,
                              isError: true,
                              outcome: timeout ? 'timeout' : 'failed',
                            })
                          }),
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
                    invoke: {
                      src: 'afterToolExecutionHook',
                      input: ({ context }) => context,
                      onDone: {
                        target: 'nextCall',
                        actions: [
                          assign(({ context, event }) => {
                            const result = context.current?.result
                            return setResult(context, {
                              output: event.output.output,
                              isError: event.output.isError,
                              outcome: result?.outcome ?? 'executed',
                            })
                          }),
                          'recordToolResult',
                        ],
                      },
                      onError: { target: '#agent.failed', actions: 'failWithHookError' },
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
                invoke: {
                  src: 'afterTurnHook',
                  input: ({ context }) => context,
                  onDone: [
                    {
                      guard: ({ context }) => context.calls.length > 0 && !context.handoff,
                      target: '#agent.running.turn',
                      reenter: true,
                      actions: 'emitTurnEnd',
                    },
                    { target: 'turnEnd' },
                  ],
                  onError: { target: '#agent.failed', actions: 'failWithHookError' },
                },
              },
              turnEnd: {
                description: 'After a reply with tool calls, another turn; after a final answer (or a hand-off), done.',
                always: [
                  {
                    guard: 'handoffRequested',
                    target: '#agent.done',
                    actions: ['emitTurnEnd', assign({ output: '', stopReason: 'handoff' })],
                  },
                  {
                    guard: 'replyHasToolCalls',
                    target: '#agent.running.nextTurn',
                    actions: 'emitTurnEnd',
                  },
                  {
                    target: '#agent.done',
                    actions: [
                      'emitTurnEnd',
                      assign({ output: ({ context }) => context.reply?.content ?? '', stopReason: 'final_answer' }),
                    ],
                  },
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

  function openCall(context: AgentContext): CurrentCall {
    const call = context.calls[context.callIndex]
    if (!call) throw new Error('no call at index')
    const prepared = prepareCall(call)
    return {
      callId: call.id,
      toolName: call.function.name,
      rawArguments: call.function.arguments,
      args: prepared.args,
      startedAt: clock.now(),
      invalid: prepared.invalid,
      approval: undefined,
      result: undefined,
    }
  }

  /**
   * Parses and validates a call once (guards and the opening action both need it). Keyed by the
   * call object, which stays the same for the whole reply.
   */
  function prepareCall(call: ToolCall): Pick<CurrentCall, 'args' | 'invalid'> {
    let prepared = preparedCalls.get(call)
    if (!prepared) {
      prepared = validateCall(call)
      preparedCalls.set(call, prepared)
    }
    return prepared
  }

  function validateCall(call: ToolCall): Pick<CurrentCall, 'args' | 'invalid'> {
    const name = call.function.name
    const tool = runtime.tools.get(name)
    if (!tool) {
      const names = [...runtime.tools.keys()]
      return {
        args: undefined,
        invalid: {
          outcome: 'unknown_tool',
          message: `Error: unknown tool "${name}". Available tools: ${names.length > 0 ? names.join(', ') : '(none)'}.`,
        },
      }
    }
    let parsed: unknown
    const raw = call.function.arguments.trim()
    try {
      // Some endpoints send "" for a call without arguments.
      parsed = raw === '' ? {} : JSON.parse(raw)
    } catch (error) {
      return {
        args: undefined,
        invalid: {
          outcome: 'invalid_arguments',
          message: `Error: the arguments for "${name}" are not valid JSON (${(error as Error).message}). Send one JSON object that matches the tool's schema.`,
        },
      }
    }
    const validation = tool.validate(parsed)
    if (!validation.ok) {
      return {
        args: parsed,
        invalid: {
          outcome: 'invalid_arguments',
          message: `Error: invalid arguments for "${name}", the tool did not run:\n${validation.issues.map((issue) => `- ${issue}`).join('\n')}`,
        },
      }
    }
    return { args: validation.value, invalid: undefined }
  }

  function decisionMatches(context: AgentContext, decision: unknown): boolean {
    return mismatchReason(context, decision) === ''
  }

  function mismatchReason(context: AgentContext, decision: unknown): string {
    const request = context.current?.approval
    if (!request) return 'no approval is pending'
    if (!decision || typeof decision !== 'object') return 'the decision is not an object'
    const d = decision as Partial<ApprovalDecision>
    if (typeof d.approved !== 'boolean') return 'the decision has no boolean "approved"'
    if (typeof d.reviewer !== 'string' || d.reviewer === '') return 'the decision does not say who decided'
    if (d.requestId !== request.requestId) return `requestId ${String(d.requestId)} does not match the pending request`
    if (d.callId !== request.callId) return `callId ${String(d.callId)} does not match the pending call ${request.callId}`
    if (d.digest !== request.digest) return 'the digest does not match the pending call (arguments differ from what was shown)'
    return ''
  }

  function rejectDecision(context: AgentContext, decision: unknown, reason: string): void {
    const request = context.current?.approval
    emit(context, { type: 'approval.rejected', ...(request ? { request } : {}), decision, reason })
    const d = (decision && typeof decision === 'object' ? decision : {}) as Partial<ApprovalDecision>
    audit(context, {
      kind: 'approval.rejected',
      ...(typeof d.callId === 'string' ? { callId: d.callId } : {}),
      ...(request ? { toolName: request.toolName, shown: request.arguments, digest: request.digest } : {}),
      decision: typeof d.approved === 'boolean' ? (d.approved ? 'approved' : 'denied') : 'malformed',
      reason,
      actor: typeof d.reviewer === 'string' ? d.reviewer : 'unknown',
      decidedAt: clock.now(),
    })
  }
}

function createContext(input: AgentInput): AgentContext {
  const messages: Message[] = []
  if (input.instructions) messages.push({ role: 'system', content: input.instructions })
  if (typeof input.input === 'string') messages.push({ role: 'user', content: input.input })
  else messages.push(...input.input.map((m) => deepFreeze(structuredClone(m))))
  for (const m of messages) Object.freeze(m)
  const lastUser = [...messages].reverse().find((m) => m.role === 'user')
  return {
    run: {
      agentId: input.agentId,
      runId: input.runId,
      runPath: input.runPath ?? [],
      agentPath: input.agentPath ?? [],
      parentRunId: input.parentRunId,
      input: typeof input.input === 'string' ? input.input : ((lastUser?.content as string | undefined) ?? ''),
      maxTurns: input.maxTurns,
      maxTokens: input.maxTokens,
      startedAt: input.startedAt,
    },
    handoff: undefined,
    messages,
    turn: 0,
    usage: emptyUsage(),
    model: { outgoing: undefined, attempt: 1, retryDelayMs: 0, lastError: undefined, finishReason: undefined },
    reply: undefined,
    calls: [],
    callIndex: 0,
    current: undefined,
    toolResults: [],
    steering: input.steering ?? [],
    batchSteered: false,
    status: 'idle',
    output: undefined,
    error: undefined,
    stopReason: undefined,
  }
}

function acceptReply(context: AgentContext, response: ProviderResponse): Partial<AgentContext> {
  // Transcript messages are immutable once in: events and hooks share them without copies.
  const message = deepFreeze(response.message)
  return {
    reply: message,
    model: { ...context.model, outgoing: undefined, finishReason: response.finishReason },
    calls: message.tool_calls ?? [],
    callIndex: 0,
    messages: [...context.messages, message],
    usage: addUsage(context.usage, response.usage),
  }
}

function gateResult(gate: ToolGate): NonNullable<CurrentCall['result']> {
  if (gate.action === 'deny') return { output: gate.reason, isError: true, outcome: 'denied' }
  if (gate.action === 'respond') return { output: gate.result, isError: false, outcome: 'responded' }
  throw new Error('allow has no result')
}

/** Exponential backoff with full jitter, bounded; a server's Retry-After wins when given. */
function retryDelay(runtime: AgentRuntime, attempt: number, error: unknown): number {
  const retryAfter = (error as { details?: { retryAfterMs?: unknown } })?.details?.retryAfterMs
  if (typeof retryAfter === 'number' && retryAfter >= 0) return Math.min(retryAfter, runtime.retry.maxDelayMs)
  const ceiling = Math.min(runtime.retry.maxDelayMs, runtime.retry.baseDelayMs * 2 ** (attempt - 1))
  return Math.round(ceiling / 2 + (Math.random() * ceiling) / 2)
}

export type AgentMachine = ReturnType<typeof createAgentMachine>

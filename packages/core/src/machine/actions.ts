import { backoffDelay } from '../backoff.ts'
import {
  BudgetExceededError,
  ErrorCode,
  HookError,
  MaxTurnsExceededError,
  RunCancelledError,
  type SerializedError,
  SignalboxError,
  serializeError,
} from '../errors.ts'
import { deepFreeze, type ToolOutcome } from '../events.ts'
import { approvalExtras } from '../hitl/approval-context.ts'
import { decisionMismatch, rejectedDecisionAudit } from '../hitl/decision.ts'
import { callDigest } from '../hitl/digest.ts'
import { approveEdited, checkEditedArguments, noteEditedArguments } from '../hitl/edited-arguments.ts'
import type { ApprovalDecision, ApprovalRequest } from '../hitl/types.ts'
import type { ToolGate } from '../hooks.ts'
import { addUsage, type ToolCall, type ToolMessage } from '../messages.ts'
import type { ProviderResponse } from '../provider/provider.ts'
import type { ToolRunOutput } from './actors.ts'
import type { AgentContext, CurrentCall, StopReason } from './context.ts'
import { askForValidAnswer, failWithInvalidAnswer } from './output-check.ts'
import { openCall, type PreparedCall } from './prepare-call.ts'
import { RunEvents } from './run-events.ts'
import type { AgentRuntime } from './runtime.ts'
import {
  approvalDeniedText,
  approvalTimedOutText,
  approvalUnavailableText,
  batchSteeredText,
  failedToolResult,
  handedOverText,
  invalidCallText,
  steeredText,
} from './tool-result-texts.ts'
import { type TurnLimitReached, turnLimit } from './turn-limit.ts'

type CallResult = NonNullable<CurrentCall['result']>

/** The actions that only write events and audit entries; every other action updates the context. */
export const EFFECT_ACTIONS = [
  'emitRunStart',
  'emitTurnStart',
  'emitModelRequest',
  'emitModelResponse',
  'emitToolStart',
  'emitTurnEnd',
  'emitRunError',
  'emitRunEnd',
  'rejectDecision',
] as const satisfies readonly (keyof MachineActions)[]

/**
 * What the agent machine's actions do, as functions of the context (and one typed parameter) that
 * return the context update. Every public method of this class is an action of the machine, under
 * its own name (`createActionTable`); its helpers are private. Events and audit entries are written
 * here, through the runtime. A class: one per agent definition, its methods shared.
 */
export class MachineActions extends RunEvents {
  readonly #prepare: (call: ToolCall, offered?: readonly string[]) => PreparedCall

  constructor(runtime: AgentRuntime, prepare: (call: ToolCall, offered?: readonly string[]) => PreparedCall) {
    super(runtime)
    this.#prepare = prepare
  }

  /** What the model reads from a tool run: a result recorded in the ledger (a resumed call) as it was. */
  #toolOutputResult(context: AgentContext, output: ToolRunOutput): CallResult {
    return (
      (output.recorded as CallResult | undefined) ?? {
        output: noteEditedArguments(context.current, output.output),
        isError: false,
        outcome: 'executed',
      }
    )
  }

  /** The call's result joins the transcript (tool.end) and the call closes. */
  #record(context: AgentContext, call: CurrentCall, result: CallResult, ranForMs = call.ranForMs ?? 0): Partial<AgentContext> {
    const message: ToolMessage = Object.freeze({ role: 'tool', tool_call_id: call.callId, content: result.output })
    // The hot path's events are built only when someone listens.
    if (this.listening('tool.end'))
      this.emit(context, {
        type: 'tool.end',
        callId: call.callId,
        toolName: call.toolName,
        output: result.output,
        isError: result.isError,
        outcome: result.outcome,
        // The tool's own time: not the hooks before it, nor the wait for a person's yes.
        durationMs: ranForMs,
      })
    return {
      messages: [...context.messages, message],
      toolResults: [...context.toolResults, message],
      callIndex: context.callIndex + 1,
      current: undefined,
    }
  }

  /** The call being handled; the states that use it are entered only with one open. */
  #current(context: AgentContext): CurrentCall {
    return context.current as CurrentCall
  }

  /** The pending request; the approval states are entered only with one open. */
  #pendingRequest(context: AgentContext): ApprovalRequest {
    return context.current?.approval as ApprovalRequest
  }

  #setResult(context: AgentContext, result: CallResult, ranForMs?: number): Partial<AgentContext> {
    if (!context.current) return { current: undefined }
    return { current: ranForMs === undefined ? { ...context.current, result } : { ...context.current, result, ranForMs } }
  }

  queueSteering(context: AgentContext, steer: { text: string; from?: string | undefined }): Partial<AgentContext> {
    const { text, from = 'user' } = steer
    this.emit(context, { type: 'steering.queued', text, from })
    return { steering: [...context.steering, { text, from, at: this.runtime.clock.now() }] }
  }

  acceptReply(context: AgentContext, response: ProviderResponse): Partial<AgentContext> {
    // Transcript messages are immutable once in: events and hooks share them without copies.
    const message = deepFreeze(response.message)
    return {
      reply: message,
      model: {
        ...context.model,
        outgoing: undefined,
        offered: context.model.outgoing?.tools.map((t) => t.name),
        finishReason: response.finishReason,
      },
      calls: message.tool_calls ?? [],
      callIndex: 0,
      messages: [...context.messages, message],
      usage: addUsage(context.usage, response.usage),
    }
  }

  /** Schedules the next attempt of a model call that failed with a transient error. */
  scheduleModelRetry(context: AgentContext, { error }: { error: unknown }): Partial<AgentContext> {
    const retryAfter = (error as { details?: { retryAfterMs?: unknown } })?.details?.retryAfterMs
    // A server's Retry-After wins when given.
    const retryDelayMs =
      typeof retryAfter === 'number' && retryAfter >= 0
        ? Math.min(retryAfter, this.runtime.retry.maxDelayMs)
        : backoffDelay(context.model.attempt, this.runtime.retry)
    const lastError = serializeError(error)
    this.emit(context, {
      type: 'model.retry',
      turn: context.turn,
      attempt: context.model.attempt,
      delayMs: retryDelayMs,
      error: lastError,
    })
    return { model: { ...context.model, lastError, retryDelayMs, retryAt: this.runtime.clock.now() + retryDelayMs } }
  }

  /** Ends the run before its turn because a limit is reached (the `beforeTurn` state's check). */
  stopAtLimit(context: AgentContext): Partial<AgentContext> {
    const reached = turnLimit(context, this.runtime, context.turn)
    if (reached === undefined) throw new SignalboxError(ErrorCode.INTERNAL_ERROR, 'stopAtLimit without a limit')
    return { turn: context.turn - 1, stopReason: reached.limit, error: this.#limitError(context, reached) }
  }

  cancel(_context: AgentContext, { reason }: { reason?: string | undefined }): Partial<AgentContext> {
    return this.#cancelled(reason ?? 'cancelled by request', 'cancelled')
  }

  /** A beforeTurn hook stopped the run. */
  stopByHook(_context: AgentContext, { reason }: { reason?: string | undefined }): Partial<AgentContext> {
    return this.#cancelled(`stopped by beforeTurn hook: ${reason ?? ''}`, 'hook_stop')
  }

  #cancelled(reason: string, stopReason: StopReason): Partial<AgentContext> {
    return { stopReason, error: serializeError(new RunCancelledError(reason)) }
  }

  failWithHookError(_context: AgentContext, { error }: { error: unknown }): Partial<AgentContext> {
    return {
      error: serializeError(HookError.is(error) ? error : new HookError('unknown', error)),
      stopReason: 'hook_error',
    }
  }

  /** A tool's `needsApproval` predicate threw: the run fails closed, as for a hook. */
  failWithRuleError(_context: AgentContext, { error }: { error: unknown }): Partial<AgentContext> {
    return { error: serializeError(new HookError('needsApproval', error)), stopReason: 'hook_error' }
  }

  /** The model call starts afresh (first attempt), sending the transcript as it is. */
  resetModelCall(context: AgentContext): Partial<AgentContext> {
    return { model: { ...context.model, attempt: 1, outgoing: undefined } }
  }

  /** The model call starts afresh with what the beforeProviderCall hooks decided to send. */
  sendRewritten(context: AgentContext, outgoing: AgentContext['model']['outgoing']): Partial<AgentContext> {
    return { model: { ...context.model, attempt: 1, outgoing } }
  }

  nextAttempt(context: AgentContext): Partial<AgentContext> {
    return { model: { ...context.model, attempt: context.model.attempt + 1 } }
  }

  finishWithHandoff(): Partial<AgentContext> {
    return { output: '', stopReason: 'handoff' }
  }

  finishWithAnswer(context: AgentContext): Partial<AgentContext> {
    return { output: context.reply?.content ?? '', stopReason: 'final_answer' }
  }

  /** With an output schema: the model reads what was wrong with its answer, and answers again. */
  askForValidAnswer(context: AgentContext): Partial<AgentContext> {
    return askForValidAnswer(context, this.runtime)
  }

  failWithInvalidAnswer(context: AgentContext): Partial<AgentContext> {
    return failWithInvalidAnswer(context, this.runtime)
  }

  failWithProviderError(context: AgentContext, { error }: { error: unknown }): Partial<AgentContext> {
    return {
      error: serializeError(error),
      stopReason: 'provider_error',
      model: { ...context.model, outgoing: undefined },
    }
  }

  /** A supervisor giving up on a child (or any fatal tool failure) ends the run. */
  failWithToolError(_context: AgentContext, { error }: { error: unknown }): Partial<AgentContext> {
    return { error: serializeError(error), stopReason: 'tool_fatal' }
  }

  /** Opens the next call of the reply (routing only does so while one is left). */
  openCall(context: AgentContext): Partial<AgentContext> {
    const call = context.calls[context.callIndex] as ToolCall
    return { current: openCall(call, this.#prepare(call, context.model.offered), this.runtime.clock.now()) }
  }

  acceptToolOutput(context: AgentContext, output: ToolRunOutput): Partial<AgentContext> {
    return {
      ...this.#setResult(context, this.#toolOutputResult(context, output), output.ranForMs),
      ...(output.handoff ? { handoff: output.handoff } : {}),
    }
  }

  /** A tool threw (or timed out): the model reads the error and the run goes on. */
  toolFailed(context: AgentContext, { error, elapsedMs }: { error: unknown; elapsedMs: number }): Partial<AgentContext> {
    return this.#setResult(context, failedToolResult(error, context.current?.toolName), elapsedMs)
  }

  handedOver(context: AgentContext): Partial<AgentContext> {
    return this.#setResult(context, { output: handedOverText(context.handoff?.to), isError: false, outcome: 'steered' })
  }

  callInvalid(context: AgentContext): Partial<AgentContext> {
    const invalid = context.current?.invalid
    return this.#setResult(context, {
      output: invalid?.message ?? invalidCallText,
      isError: true,
      outcome: invalid?.outcome ?? 'invalid_arguments',
    })
  }

  /** A beforeToolExecution hook denied the call or answered it. */
  gated(context: AgentContext, gate: ToolGate): Partial<AgentContext> {
    return this.#setResult(context, gateResult(gate))
  }

  /** An afterToolExecution hook rewrote what the model reads. */
  rewritten(context: AgentContext, rewrite: { output: string; isError: boolean }): Partial<AgentContext> {
    return this.#setResult(context, {
      output: rewrite.output,
      isError: rewrite.isError,
      outcome: context.current?.result?.outcome ?? 'executed',
    })
  }

  applySteering(context: AgentContext): Partial<AgentContext> {
    const call = this.#current(context)
    const items = context.steering
    if (items.length === 0) {
      // cancel-batch: an earlier call of this reply already carried the correction.
      return this.#setResult(context, { output: batchSteeredText, isError: false, outcome: 'steered' })
    }
    const text = items.map((item) => item.text).join('\n')
    const from = [...new Set(items.map((item) => item.from))].join(', ')
    this.emit(context, { type: 'steering.applied', callId: call.callId, toolName: call.toolName, text, from })
    // The person deciding this call's approval must stop: the request is withdrawn, saying by whom.
    if (call.approval !== undefined) this.#withdrawApproval(call.approval, from)
    const now = this.runtime.clock.now()
    for (const item of items) {
      this.audit(context, {
        kind: 'steering.applied',
        callId: call.callId,
        toolName: call.toolName,
        // The same shape as an approval's: the call's arguments as an object (the tool name is beside it).
        shown: call.args ?? {},
        decision: item.text,
        actor: item.from,
        requestedAt: item.at,
        decidedAt: now,
        latencyMs: now - item.at,
      })
    }
    return {
      ...this.#setResult(context, { output: steeredText(text), isError: false, outcome: 'steered' }),
      steering: [],
      batchSteered: this.runtime.steeringPolicy === 'cancel-batch',
    }
  }

  /** Tells the reviewer the agent no longer waits for `request` (a reviewer's failure never reaches the run). */
  #withdrawApproval(request: ApprovalRequest, by: string): void {
    try {
      this.runtime.reviewer?.withdraw?.(request, { reason: 'a correction cancelled the call', by })
    } catch {
      // Best effort: without it the request leaves the reviewers when they see the agent stopped waiting.
    }
  }

  openApproval(context: AgentContext): Partial<AgentContext> {
    const call = this.#current(context)
    const now = this.runtime.clock.now()
    // A copy: events are frozen deep, and the tool's schema object is not ours to freeze.
    const tool = this.runtime.tools.get(call.toolName)
    const parameters = structuredClone(tool?.parameters)
    const request: ApprovalRequest = {
      requestId: this.runtime.ids('request'),
      agentId: context.run.agentId,
      runId: context.run.runId,
      runPath: context.run.runPath,
      ...(context.run.agentPath.length > 0 ? { agentPath: context.run.agentPath } : {}),
      callId: call.callId,
      toolName: call.toolName,
      arguments: call.args,
      digest: callDigest(call.toolName, call.args),
      deadline: now + this.runtime.approvalTimeoutMs,
      requestedAt: now,
      ...(parameters ? { parameters } : {}),
      ...approvalExtras({
        description: tool?.description,
        input: context.run.input,
        messages: context.messages,
        reply: context.reply,
      }),
    }
    // Announced by the `requestApproval` actor, once the wait is durable (see actors.ts).
    return { current: { ...call, approval: request } }
  }

  /** A decision that quotes the pending call: applied, audited, and on a denial read by the model. */
  approvalDecided(context: AgentContext, decision: ApprovalDecision): Partial<AgentContext> {
    const request = this.#pendingRequest(context)
    // The checkpoint keeps what identifies the decision; the signed message rides with the call only.
    const { evidence: _evidence, ...applied } = decision
    this.runtime.journals?.get(context.run.runId)?.decisionApplied(applied)
    const edit = checkEditedArguments(this.runtime.tools.get(request.toolName), decision)
    if (edit.kind !== 'none')
      return approveEdited({
        context,
        request,
        decision,
        edit,
        emit: (c, body) => this.emit(c, body),
        auditApproval: (c, r, outcome, extra) => this.auditApproval(c, r, outcome, extra),
        setResult: (c, result) => this.#setResult(c, result),
      })
    const latencyMs = decision.decidedAt - request.requestedAt
    this.emit(context, { type: 'approval.decided', request, decision, latencyMs })
    this.auditApproval(context, request, {
      kind: decision.approved ? 'approval.granted' : 'approval.denied',
      decision: decision.approved ? 'approved' : 'denied',
      reason: decision.reason,
      actor: decision.reviewer,
      decidedAt: decision.decidedAt,
    })
    if (decision.approved) return { current: context.current ? { ...context.current, approved: decision } : undefined }
    return this.#setResult(context, {
      output: approvalDeniedText(request, decision),
      isError: true,
      outcome: 'approval_denied',
    })
  }

  approvalTimedOut(context: AgentContext): Partial<AgentContext> {
    const request = this.#pendingRequest(context)
    this.emit(context, { type: 'approval.timeout', request })
    this.auditApproval(context, request, {
      kind: 'approval.timeout',
      decision: 'timeout',
      reason: 'no decision before the deadline; the safe default is to deny',
      actor: 'system',
      decidedAt: this.runtime.clock.now(),
    })
    return this.#setResult(context, { output: approvalTimedOutText(request), isError: true, outcome: 'approval_timeout' })
  }

  approvalUnavailable(context: AgentContext, reason: string): Partial<AgentContext> {
    const request = this.#pendingRequest(context)
    this.emit(context, { type: 'approval.unavailable', request, reason })
    this.auditApproval(context, request, {
      kind: 'approval.unavailable',
      decision: 'unavailable',
      reason: `no reviewer could decide: ${reason}`,
      actor: 'system',
      decidedAt: this.runtime.clock.now(),
    })
    return this.#setResult(context, {
      output: approvalUnavailableText(request, reason),
      isError: true,
      outcome: 'approval_unavailable',
    })
  }

  /** A decision that cannot be applied (late, duplicate, forged, malformed): recorded, never applied. */
  rejectDecision(context: AgentContext, rejected: { decision: unknown; reason?: string }): void {
    const request = context.current?.approval
    const requestId = (rejected.decision as { requestId?: unknown } | null)?.requestId
    // A re-delivery of a decision this run already applied (e.g. replayed after a resume).
    const duplicate = this.runtime.journals?.get(context.run.runId)?.isApplied(requestId) === true
    const reason = duplicate
      ? `decision ${String(requestId)} was already applied (duplicate delivery)`
      : (rejected.reason ?? decisionMismatch(request, rejected.decision) ?? '')
    this.emit(context, { type: 'approval.rejected', ...(request ? { request } : {}), decision: rejected.decision, reason })
    const entry = rejectedDecisionAudit({
      run: context.run,
      request,
      decision: rejected.decision,
      reason,
      at: this.runtime.clock.now(),
    })
    this.runtime.recordAudit(duplicate ? { ...entry, kind: 'approval.duplicate' } : entry)
  }

  recordToolResult(context: AgentContext): Partial<AgentContext> {
    const call = this.#current(context)
    return this.#record(context, call, call.result ?? { output: '', isError: false, outcome: 'executed' as ToolOutcome })
  }

  /**
   * A new turn's first update (the `turn` state's entry, or a direct route that skips it): the
   * counter up, this turn's calls, results and reply cleared, a fresh model call.
   */
  startTurn(context: AgentContext): Partial<AgentContext> {
    return {
      turn: context.turn + 1,
      calls: [],
      callIndex: 0,
      toolResults: [],
      reply: undefined,
      model: { ...context.model, finishReason: undefined, attempt: 1, outgoing: undefined },
      batchSteered: false,
    }
  }

  /**
   * The reply accepted and its first call opened in one context update: a direct route from the
   * model call to that call's state (each separate `assign` costs XState a snapshot).
   */
  acceptReplyAndOpen(context: AgentContext, response: ProviderResponse): Partial<AgentContext> {
    const accepted = this.acceptReply(context, response)
    const call = (accepted.calls as ToolCall[])[0] as ToolCall
    accepted.current = openCall(call, this.#prepare(call, accepted.model?.offered), this.runtime.clock.now())
    return accepted
  }

  /** The tool's output taken and its result joined to the transcript, in one context update. */
  finishCall(context: AgentContext, output: ToolRunOutput): Partial<AgentContext> {
    const recorded = this.#record(context, this.#current(context), this.#toolOutputResult(context, output), output.ranForMs)
    if (output.handoff) recorded.handoff = output.handoff
    return recorded
  }

  /** An afterToolExecution rewrite taken and the result joined to the transcript, in one update. */
  finishRewritten(context: AgentContext, rewrite: { output: string; isError: boolean }): Partial<AgentContext> {
    const call = this.#current(context)
    return this.#record(context, call, {
      output: rewrite.output,
      isError: rewrite.isError,
      outcome: call.result?.outcome ?? 'executed',
    })
  }

  /**
   * A turn ends and the next one starts in one context update (a direct route that does not
   * re-enter the `turn` state): turn.end, then the new turn's counters; turn.start when the
   * route goes past the beforeTurn hook point.
   */
  nextTurn(context: AgentContext, announce: boolean): Partial<AgentContext> {
    this.emitTurnEnd(context)
    const started = this.startTurn(context)
    if (announce && this.listening('turn.start')) this.emit(context, { type: 'turn.start', turn: started.turn as number })
    return started
  }

  /** The reply's last call done and the next turn started, in one update (a direct route into the next turn). */
  finishStep(context: AgentContext, { output, announce }: { output: ToolRunOutput; announce: boolean }): Partial<AgentContext> {
    // The next turn reads only the counters, the calls and the model call, which finishing a call leaves alone.
    return Object.assign(this.finishCall(context, output), this.nextTurn(context, announce))
  }

  #limitError(context: AgentContext, { limit, spent }: TurnLimitReached): SerializedError {
    if (limit === 'max_turns') return serializeError(new MaxTurnsExceededError(context.run.maxTurns))
    if (limit === 'max_tokens') {
      return serializeError(
        new BudgetExceededError(`The run used ${context.usage.totalTokens} tokens; its budget is ${context.run.maxTokens}.`, {
          maxTokens: context.run.maxTokens,
          used: context.usage.totalTokens,
        }),
      )
    }
    const said = spent ?? { code: ErrorCode.BUDGET_EXCEEDED, message: 'The budget is spent.' }
    return { code: said.code, message: said.message, fault: 'user' }
  }
}

export function gateResult(gate: ToolGate): CallResult {
  if (gate.action === 'deny') return { output: gate.reason, isError: true, outcome: 'denied' }
  if (gate.action === 'respond') return { output: gate.result, isError: false, outcome: 'responded' }
  throw new SignalboxError(ErrorCode.INTERNAL_ERROR, 'allow has no result')
}

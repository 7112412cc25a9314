import type { AgentEvent } from '../events.ts'
import type { ApprovalRequest, AuditEntry } from '../hitl/types.ts'
import type { ProviderResponse } from '../provider/provider.ts'
import { runEvent } from './actors.ts'
import type { AgentContext, CurrentCall } from './context.ts'
import type { AgentRuntime } from './runtime.ts'

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never
export type EventBody = DistributiveOmit<AgentEvent, 'agentId' | 'runId' | 'runPath' | 'agentPath' | 'parentRunId' | 'at'>

/**
 * What a run tells those who watch it: its events (built only when someone listens: the hot
 * path pays nothing for an event nobody reads) and its audit entries. The machine's actions
 * (`MachineActions`) are these plus what they do to the context.
 */
export class RunEvents {
  constructor(readonly runtime: AgentRuntime) {}

  listening(type: AgentEvent['type']): boolean {
    return this.runtime.events.has(type)
  }

  emit(context: AgentContext, body: EventBody): void {
    if (!this.runtime.events.has(body.type)) return
    this.runtime.events.emit(runEvent(context.run, this.runtime.clock.now(), body) as AgentEvent)
  }

  audit(context: AgentContext, entry: Omit<AuditEntry, 'agentId' | 'runId' | 'runPath'>): void {
    this.runtime.recordAudit({ agentId: context.run.agentId, runId: context.run.runId, runPath: context.run.runPath, ...entry })
  }

  /** Who decided what on a request, and what they were shown (the exact call). */
  auditApproval(
    context: AgentContext,
    request: ApprovalRequest,
    outcome: { kind: AuditEntry['kind']; decision: string; reason: string | undefined; actor: string; decidedAt: number },
    extra: Partial<AuditEntry> = {},
  ): void {
    this.audit(context, {
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
      // The agent's own clock, unlike a reviewer's `decidedAt`: when the call was let go (or refused).
      releasedAt: this.runtime.clock.now(),
      ...extra,
    })
  }

  emitModelResponse(context: AgentContext, output: ProviderResponse & { durationMs: number }): void {
    if (!this.listening('model.response')) return
    this.emit(context, {
      type: 'model.response',
      turn: context.turn,
      message: output.message,
      finishReason: output.finishReason,
      ...(output.usage ? { usage: output.usage } : {}),
      durationMs: output.durationMs,
      ...(output.model ? { model: output.model } : {}),
      ...(output.id ? { responseId: output.id } : {}),
    })
  }

  emitModelRequest(context: AgentContext): void {
    if (!this.runtime.events.has('model.request')) return
    const sent = context.model.outgoing ?? { messages: context.messages, tools: this.runtime.toolSpecs }
    this.emit(context, {
      type: 'model.request',
      turn: context.turn,
      attempt: context.model.attempt,
      messages: sent.messages,
      tools: sent.tools.map((t) => t.name),
    })
  }

  emitToolStart(context: AgentContext): void {
    if (!this.runtime.events.has('tool.start')) return
    const call = context.current as CurrentCall
    // A copy: the event is frozen, and the tool may still change its own arguments.
    this.emit(context, {
      type: 'tool.start',
      callId: call.callId,
      toolName: call.toolName,
      arguments: structuredClone(call.args),
    })
  }

  emitRunStart(context: AgentContext): void {
    this.emit(context, { type: 'run.start', input: context.run.input })
  }

  emitTurnStart(context: AgentContext): void {
    if (this.listening('turn.start')) this.emit(context, { type: 'turn.start', turn: context.turn })
  }

  emitTurnEnd(context: AgentContext): void {
    if (this.listening('turn.end')) this.emit(context, { type: 'turn.end', turn: context.turn, toolCalls: context.calls.length })
  }

  emitRunError(context: AgentContext): void {
    if (context.error) this.emit(context, { type: 'run.error', error: context.error })
  }

  emitRunEnd(context: AgentContext): void {
    this.emit(context, {
      type: 'run.end',
      status: context.status as 'done' | 'failed' | 'cancelled',
      ...(context.output === undefined ? {} : { output: context.output }),
      ...(context.error ? { error: context.error } : {}),
      turns: context.turn,
      usage: context.usage,
      ...(context.handoff ? { handoff: { ...context.handoff } } : {}),
    })
  }
}

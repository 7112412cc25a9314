import { type Agent, type AgentEvent, type Clock, SignalboxError } from '@signalbox/core'
import { type Bus, type BusMessage, createSubjects, type Subjects, type Subscription } from '@signalbox/core/bus'
import { agentPurpose, describeError, statePath } from '@signalbox/core/internal'
import {
  type ControlReplyMessage,
  ControlRequestMessage,
  decodeMessage,
  type EventMessage,
  encodeMessage,
  errorMessage,
  PROTOCOL_VERSION,
  ProtocolError,
  SteerMessage,
} from '@signalbox/core/protocol'
import { createRejectionReporter, toWireError, truncate } from '../requests/rejections.ts'
import type { TrustPolicy } from '../trust/policy.ts'
import type { EvidenceBook } from '../trust/signed-audit.ts'

export interface ConnectAgentOptions {
  bus: Bus
  subjects?: Subjects
  /** Publish the agent's events on `agents.<agent>.events.<type>`. Default true. */
  events?: boolean
  /** Accept corrections from `agents.<agent>.steer`. Default true. */
  steering?: boolean
  /** Answer `control.status` / `control.cancel` on `agents.<agent>.control`. Default true. */
  control?: boolean
  /**
   * Who may steer (`steerers`) and cancel (`controllers`) this agent: steering and cancels must be
   * signed by a listed key, for this agent, and (with `maxAgeMs`) recent. Without one (the
   * embedded case) they are not checked. `control.status` is read-only and never needs a signature.
   */
  trust?: TrustPolicy
  /** Accepted signed steering is kept here for the audit entry that records it (`signedAuditLog`). */
  evidence?: EvidenceBook
  clock?: Clock
}

export interface AgentConnection {
  /** Resolves when every subscription is live on the server. */
  readonly ready: Promise<void>
  close(): void
}

/**
 * Puts an agent on the bus: its events go out, corrections and control requests come in.
 * Reviewers, answerers and remote tools are wired separately (they are the agent's options).
 * Any output type: a connection carries events and control, never the output.
 */
export function connectAgent(agent: Agent<any>, options: ConnectAgentOptions): AgentConnection {
  const { bus, trust } = options
  const now = () => (options.clock ?? { now: () => Date.now() }).now()
  /** Why a steering or cancel message may not act on this agent, or the name it acts under. */
  const identify = (
    message: SteerMessage | ControlRequestMessage,
  ): { ok: true; name?: string } | { ok: false; reason: string } => {
    if (trust === undefined) return { ok: true }
    const verdict = trust.check(message, { agentId: agent.id, now: now() })
    return verdict.ok ? { ok: true, name: verdict.name } : { ok: false, reason: `${verdict.code}: ${verdict.reason}` }
  }
  const subjects = options.subjects ?? createSubjects()
  const report = createRejectionReporter({
    bus,
    subjects,
    component: `agent-${agent.id}`,
    ...(options.clock ? { clock: options.clock } : {}),
  })
  const subscriptions: Subscription[] = []
  const cleanups: (() => void)[] = []

  if (options.events !== false) cleanups.push(agent.on('*', (event) => publishEvent(bus, subjects, event)))

  if (options.steering !== false) {
    const seen = new Set<string>()
    // A durable agent's resumed runs start after the last correction they saw, so one published
    // while no process was connected is applied now; otherwise, new corrections only.
    const startSeq = agent.steeringResumeFrom()
    subscriptions.push(
      bus.durableConsume(
        subjects.steer(agent.id),
        (message) => {
          message.ack()
          const decoded = decodeMessage(message.data, SteerMessage, { maxBytes: bus.maxPayload })
          if (!decoded.ok) return report(message.subject, message.data, decoded.error)
          const steer = decoded.value
          // A publish retried across a reconnect may arrive twice: apply each correction once.
          if (seen.has(steer.steerId)) return
          const refuse = (why: string) =>
            report(
              message.subject,
              message.data,
              new ProtocolError('PROTOCOL_INVALID_MESSAGE', `Steering ${steer.steerId} refused: ${why}`),
            )
          if (steer.text.trim() === '') return refuse('the correction has no text')
          const who = identify(steer)
          if (!who.ok) return refuse(who.reason)
          // The name shown to the model and audited is the policy's, never the message's `from`.
          const from = who.name ?? steer.from
          /**
           * A run restored from a checkpoint has seen the corrections up to its cursor. One that
           * never saw any has no cursor: it takes the corrections aimed at it, and the general ones
           * stored since it began (by the stream's clock; older ones were never meant for it).
           */
          const cursorOf = (runId: string) => agent.steeringCursor(runId)
          const isNewsTo = (runId: string) => {
            const cursor = cursorOf(runId)
            if (cursor !== undefined) return cursor < message.seq
            const since = agent.steeringSince(runId)
            return since !== undefined && message.storedAt !== undefined && message.storedAt >= since
          }
          let targets: { steer(text: string, options: { from: string }): void }[] = [agent]
          if (steer.runId !== undefined) {
            const handle = agent.runs.get(steer.runId)
            // Said, not dropped in silence: the operator aimed at a run that is not (or no longer) here.
            // (Not while replaying for resumed runs: old corrections of finished runs are no news.)
            if (handle === undefined) {
              return startSeq === undefined ? refuse(`run ${steer.runId} is not active on agent ${agent.id}`) : undefined
            }
            const cursor = cursorOf(steer.runId)
            targets = cursor === undefined || cursor < message.seq ? [handle] : []
          } else if (startSeq !== undefined && agent.runs.size > 0) {
            targets = [...agent.runs.values()].filter((handle) => isNewsTo(handle.runId))
          }
          // Kept first: a correction can be applied (and audited) inside `steer` itself.
          if (trust !== undefined) options.evidence?.remember(`steer:${steer.text}`, steer)
          // Recorded first, so the checkpoint that stores the queued correction stores the cursor too.
          agent.steeringConsumed(message.seq)
          try {
            for (const target of targets) target.steer(steer.text, { from })
          } catch (error) {
            return refuse(describeError(error))
          }
          seen.add(steer.steerId)
          if (seen.size > 10_000) seen.delete(seen.values().next().value as string)
        },
        // One per agent (a host's connection serves several): `<user>_<agent>_steer`.
        startSeq === undefined
          ? { purpose: agentPurpose('steer', agent.id) }
          : { purpose: agentPurpose('steer', agent.id), startSeq },
      ),
    )
  }

  if (options.control !== false) {
    subscriptions.push(
      bus.subscribe(subjects.control(agent.id), (message) => {
        const decoded = decodeMessage(message.data, ControlRequestMessage, { maxBytes: bus.maxPayload })
        if (!decoded.ok) {
          if (!respond(message, errorMessage(toWireError(decoded.error)))) report(message.subject, message.data, decoded.error)
          return
        }
        const request = decoded.value
        const cancelled: string[] = []
        if (request.type === 'control.cancel') {
          const who = identify(request)
          if (!who.ok) {
            const error = new SignalboxError('CONTROL_NOT_AUTHORIZED', `Cancel refused: ${who.reason}`, { fault: 'peer' })
            if (!respond(message, errorMessage(toWireError(error)))) report(message.subject, message.data, error)
            return
          }
          for (const [runId, handle] of [...agent.runs]) {
            if (request.runId !== undefined && request.runId !== runId) continue
            const by = who.name ?? request.from
            handle.cancel(request.reason ?? `cancelled by ${by ?? 'control request'}`, by !== undefined ? { by } : undefined)
            cancelled.push(runId)
          }
        }
        const reply: ControlReplyMessage = {
          v: PROTOCOL_VERSION,
          type: 'control.reply',
          agentId: agent.id,
          runs: [...agent.runs.values()].map((handle) => {
            const snapshot = handle.actor.getSnapshot()
            return { runId: handle.runId, state: statePath(snapshot.value), turn: snapshot.context.turn }
          }),
          ...(request.type === 'control.cancel' ? { cancelled } : {}),
        }
        // A request without a reply subject has nobody to tell; the work (a cancel) is done anyway.
        respond(message, reply)
      }),
    )
  }

  return {
    ready: Promise.all(subscriptions.map((s) => s.ready)).then(() => {}),
    close() {
      for (const cleanup of cleanups) cleanup()
      for (const subscription of subscriptions) subscription.unsubscribe()
    },
  }
}

/** Replies; false when the message had no reply subject or the reply could not be sent. */
function respond(message: BusMessage, reply: { v: number; type: string }): boolean {
  try {
    return message.respond(encodeMessage(reply))
  } catch {
    return false
  }
}

/** Longest string field kept in an event that had to be trimmed to fit the bus. */
const TRIMMED_STRING_LENGTH = 4_096
/** Fields an event keeps at the very least (what happened, to whom, when). */
const IDENTITY_FIELDS = [
  'type',
  'agentId',
  'runId',
  'runPath',
  'agentPath',
  'parentRunId',
  'at',
  'turn',
  'callId',
  'toolName',
  'status',
  'outcome',
  'isError',
] as const

/**
 * Events are observe-only and lossy by design: a plain publish. One too large for the bus is
 * trimmed, never dropped (an observer must still see that the run started or a tool ended):
 * first without the transcripts, then with long strings cut, then down to its identity fields.
 */
export function publishEvent(bus: Bus, subjects: Subjects, event: AgentEvent): void {
  try {
    const subject = subjects.events(event.agentId, event.type)
    const full: EventMessage = { v: PROTOCOL_VERSION, type: 'event', event: event as unknown as EventMessage['event'] }
    let data = encodeMessage(full)
    if (data.byteLength > bus.maxPayload) {
      const { messages: _m, message: _msg, ...rest } = event as AgentEvent & { messages?: unknown; message?: unknown }
      const attempts: Record<string, unknown>[] = [
        rest,
        cutStrings(rest),
        pick(event as unknown as Record<string, unknown>, IDENTITY_FIELDS),
      ]
      const fitting = attempts
        .map((trimmed) => {
          const message: EventMessage = {
            v: PROTOCOL_VERSION,
            type: 'event',
            event: trimmed as EventMessage['event'],
            truncated: true,
          }
          return encodeMessage(message)
        })
        .find((encoded) => encoded.byteLength <= bus.maxPayload)
      if (fitting === undefined) return
      data = fitting
    }
    bus.publish(subject, data)
  } catch {
    // A closed bus or a transient failure must not reach the run.
  }
}

function cutStrings(value: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [key, field] of Object.entries(value)) {
    if (typeof field === 'string') out[key] = truncate(field, TRIMMED_STRING_LENGTH)
    else if (field !== null && typeof field === 'object' && JSON.stringify(field).length > TRIMMED_STRING_LENGTH)
      out[key] = '[trimmed]'
    else out[key] = field
  }
  return out
}

function pick(value: Record<string, unknown>, keys: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const key of keys) if (value[key] !== undefined) out[key] = value[key]
  return out
}

import { randomUUID } from 'node:crypto'
import { type AgentEvent, type Clock, SignalboxError, systemClock } from '@signalbox/core'
import { type Bus, createSubjects, type Subjects, type Subscription } from '@signalbox/core/bus'
import {
  ControlReplyMessage,
  type ControlRequestMessage,
  decodeMessage,
  ErrorMessage,
  EventMessage,
  encodeMessage,
  PROTOCOL_VERSION,
  type SteerMessage,
} from '@signalbox/core/protocol'
import { z } from 'zod/v4'
import type { Signer } from '../trust/sign.ts'

/** Queues a correction for an agent (every active run, or one `runId`). Durable: survives a server restart. */
export async function sendSteering(options: {
  bus: Bus
  agentId: string
  text: string
  from: string
  runId?: string
  subjects?: Subjects
  /** Signs the correction (and names the agent in it): agents with a trust policy accept nothing else. */
  signer?: Signer
  clock?: Clock
  signal?: AbortSignal
}): Promise<SteerMessage> {
  const subjects = options.subjects ?? createSubjects()
  const unsigned: SteerMessage = {
    v: PROTOCOL_VERSION,
    type: 'steer',
    steerId: `steer_${randomUUID()}`,
    text: options.text,
    from: options.from,
    ...(options.runId ? { runId: options.runId } : {}),
    sentAt: (options.clock ?? systemClock).now(),
    ...(options.signer ? { agentId: options.agentId } : {}),
  }
  const message = options.signer ? options.signer.sign(unsigned) : unsigned
  await options.bus.durablePublish(subjects.steer(options.agentId), encodeMessage(message), {
    msgId: message.steerId,
    ...(options.signal ? { signal: options.signal } : {}),
  })
  return message
}

const ControlReply = z.discriminatedUnion('type', [ControlReplyMessage, ErrorMessage])

/** Asks an agent for its runs' states, or cancels them: every process hosting it answers, and the reply is theirs together. */
export async function sendControl(options: {
  bus: Bus
  agentId: string
  request: { type: 'control.status' } | { type: 'control.cancel'; runId?: string; reason?: string; from?: string }
  subjects?: Subjects
  /** Signs a cancel (naming the agent and the time): agents with a trust policy refuse unsigned ones. */
  signer?: Signer
  clock?: Clock
  timeoutMs?: number
  signal?: AbortSignal
}): Promise<ControlReplyMessage> {
  const subjects = options.subjects ?? createSubjects()
  let message = { v: PROTOCOL_VERSION, ...options.request } as ControlRequestMessage
  if (options.signer && message.type === 'control.cancel') {
    const now = (options.clock ?? systemClock).now()
    message = options.signer.sign({ ...message, agentId: options.agentId, sentAt: now, from: message.from ?? 'operator' })
  }
  // Every process hosting the agent answers for its own runs (a run lives on one of them): the
  // answer is all of theirs, not whichever came first.
  const responses = await options.bus.requestMany(subjects.control(options.agentId), encodeMessage(message), {
    timeoutMs: options.timeoutMs ?? 5_000,
    requireReply: true,
    ...(options.signal ? { signal: options.signal } : {}),
  })
  let merged: ControlReplyMessage | undefined
  let malformed: Error | undefined
  for (const response of responses) {
    const decoded = decodeMessage(response.data, ControlReply, { maxBytes: options.bus.maxPayload })
    if (!decoded.ok) {
      malformed ??= decoded.error
      continue
    }
    const reply = decoded.value
    // A refusal is never hidden behind another process's answer.
    if (reply.type === 'error') throw new SignalboxError(reply.error.code, reply.error.message, { fault: 'peer' })
    merged =
      merged === undefined
        ? reply
        : {
            ...merged,
            runs: [...merged.runs, ...reply.runs],
            ...(merged.cancelled || reply.cancelled
              ? { cancelled: [...(merged.cancelled ?? []), ...(reply.cancelled ?? [])] }
              : {}),
          }
  }
  // At least one replied (requireReply): every reply was malformed.
  if (merged === undefined) throw malformed
  return merged
}

/** Calls `onEvent` for every event of one agent, or of all agents. Observe only. */
export function watchEvents(options: {
  bus: Bus
  agentId?: string
  subjects?: Subjects
  onEvent: (event: AgentEvent, meta: { truncated: boolean; subject: string }) => void
  signal?: AbortSignal
}): Subscription {
  const subjects = options.subjects ?? createSubjects()
  const subject = options.agentId ? subjects.events(options.agentId) : subjects.eventsAll()
  return options.bus.subscribe(
    subject,
    (message) => {
      const decoded = decodeMessage(message.data, EventMessage, { maxBytes: options.bus.maxPayload })
      if (!decoded.ok) return
      options.onEvent(decoded.value.event as unknown as AgentEvent, {
        truncated: decoded.value.truncated === true,
        subject: message.subject,
      })
    },
    options.signal ? { signal: options.signal } : {},
  )
}

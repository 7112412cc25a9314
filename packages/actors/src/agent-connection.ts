import {
  type Agent,
  type AgentEvent,
  type Bus,
  type Clock,
  ControlRequestMessage,
  type ControlReplyMessage,
  createSubjects,
  decodeMessage,
  encodeMessage,
  errorMessage,
  type EventMessage,
  PROTOCOL_VERSION,
  type SignalboxError,
  SteerMessage,
  type Subjects,
  type Subscription,
  statePath,
} from '@signalbox/core'
import { createRejectionReporter } from './rejections.ts'

export interface ConnectAgentOptions {
  bus: Bus
  subjects?: Subjects
  /** Publish the agent's events on `agents.<agent>.events.<type>`. Default true. */
  events?: boolean
  /** Accept corrections from `agents.<agent>.steer`. Default true. */
  steering?: boolean
  /** Answer `control.status` / `control.cancel` on `agents.<agent>.control`. Default true. */
  control?: boolean
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
 */
export function connectAgent(agent: Agent, options: ConnectAgentOptions): AgentConnection {
  const { bus } = options
  const subjects = options.subjects ?? createSubjects()
  const report = createRejectionReporter({ bus, subjects, component: `agent-${agent.id}`, ...(options.clock ? { clock: options.clock } : {}) })
  const subscriptions: Subscription[] = []
  const cleanups: (() => void)[] = []

  if (options.events !== false) cleanups.push(agent.on('*', (event) => publishEvent(bus, subjects, event)))

  if (options.steering !== false) {
    const seen = new Set<string>()
    subscriptions.push(
      bus.durableConsume(subjects.steer(agent.id), (message) => {
        message.ack()
        const decoded = decodeMessage(message.data, SteerMessage, { maxBytes: bus.maxPayload })
        if (!decoded.ok) return report(message.subject, message.data, decoded.error as SignalboxError)
        const steer = decoded.value
        // A publish retried across a reconnect may arrive twice: apply each correction once.
        if (seen.has(steer.steerId)) return
        seen.add(steer.steerId)
        if (seen.size > 10_000) seen.delete(seen.values().next().value as string)
        if (steer.runId === undefined) {
          agent.steer(steer.text, { from: steer.from })
          return
        }
        const handle = agent.runs.get(steer.runId)
        if (handle) handle.steer(steer.text, { from: steer.from })
      }),
    )
  }

  if (options.control !== false) {
    subscriptions.push(
      bus.subscribe(subjects.control(agent.id), (message) => {
        const decoded = decodeMessage(message.data, ControlRequestMessage, { maxBytes: bus.maxPayload })
        if (!decoded.ok) {
          if (!message.respond(encodeMessage(errorMessage(decoded.error.toJSON())))) {
            report(message.subject, message.data, decoded.error as SignalboxError)
          }
          return
        }
        const request = decoded.value
        const cancelled: string[] = []
        if (request.type === 'control.cancel') {
          for (const [runId, handle] of agent.runs) {
            if (request.runId !== undefined && request.runId !== runId) continue
            handle.cancel(request.reason ?? `cancelled by ${request.from ?? 'control request'}`)
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
        message.respond(encodeMessage(reply))
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

/** Events are observe-only and lossy by design: a plain publish, trimmed to fit the bus. */
function publishEvent(bus: Bus, subjects: Subjects, event: AgentEvent): void {
  const subject = subjects.events(event.agentId, event.type)
  let message: EventMessage = { v: PROTOCOL_VERSION, type: 'event', event: event as unknown as EventMessage['event'] }
  let data = encodeMessage(message)
  if (data.byteLength > bus.maxPayload) {
    const { messages: _m, message: _msg, ...rest } = event as AgentEvent & { messages?: unknown; message?: unknown }
    message = { v: PROTOCOL_VERSION, type: 'event', event: rest as EventMessage['event'], truncated: true }
    data = encodeMessage(message)
    if (data.byteLength > bus.maxPayload) return
  }
  try {
    bus.publish(subject, data)
  } catch {
    // A closed bus or a transient failure must not reach the run.
  }
}

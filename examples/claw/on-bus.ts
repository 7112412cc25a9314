/**
 * The claw agent on a bus, the way the console (or any reviewer) reaches it: its drop waits for a
 * decision on `approvals.claw`, its question for an answer on `ask.claw`, its events, audit and
 * machine states go out on the bus, and it takes corrections and cancels from it.
 */
import { busAuditLog, connectAgent, remoteAnswerer, remoteReviewer } from '@signalbox/actors'
import { createBusInspector } from '@signalbox/actors/inspect'
import type { Agent, Provider } from '@signalbox/core'
import type { Bus, Subjects } from '@signalbox/core/bus'
import { ClawMachine, createClawAgent } from './agent.ts'

export interface ClawOnBus {
  agent: Agent
  machine: ClawMachine
  /** Resolves when the agent listens for corrections and control requests. */
  ready: Promise<void>
  close(): void
}

export function clawOnBus(options: {
  bus: Bus
  subjects?: Subjects
  provider: Provider
  machine?: ClawMachine
  approvalTimeoutMs?: number
  questionTimeoutMs?: number
  /** Publish the machine's inspection with contents (arguments, messages). Default false. */
  inspectContents?: boolean
}): ClawOnBus {
  const { bus } = options
  const subjects = options.subjects ? { subjects: options.subjects } : {}
  const machine = options.machine ?? new ClawMachine()
  const audit = busAuditLog({ bus, ...subjects })
  const reviewer = remoteReviewer({ bus, audit, ...subjects })
  const answerer = remoteAnswerer({ bus, ...subjects })
  const inspector = createBusInspector({ bus, ...subjects, includeContents: options.inspectContents === true })
  const agent = createClawAgent({
    provider: options.provider,
    reviewer,
    answerer,
    machine,
    audit,
    inspect: inspector.inspect,
    ...(options.approvalTimeoutMs === undefined ? {} : { approvalTimeoutMs: options.approvalTimeoutMs }),
    ...(options.questionTimeoutMs === undefined ? {} : { questionTimeoutMs: options.questionTimeoutMs }),
  })
  const connection = connectAgent(agent, { bus, ...subjects })
  return {
    agent,
    machine,
    ready: connection.ready,
    close() {
      connection.close()
      reviewer.close()
      answerer.close()
    },
  }
}

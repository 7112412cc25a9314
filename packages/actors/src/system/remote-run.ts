import { AbortedError, type Clock, type Message, type RunResult } from '@signalbox/core'
import { type Bus, BusNoRespondersError, type Subjects } from '@signalbox/core/bus'
import {
  decodeMessage,
  ErrorMessage,
  encodeMessage,
  PROTOCOL_VERSION,
  RunAcceptedMessage,
  type RunHeartbeatMessage,
  type RunRequestMessage,
  type RunResultMessage,
} from '@signalbox/core/protocol'
import { z } from 'zod/v4'
import { sendControl } from '../agents/clients.ts'
import type { Signer } from '../trust/sign.ts'
import { ChildRunError } from './child-run-error.ts'
import { repeat } from './repeat.ts'
import { waitForResult } from './run-results.ts'
import type { RunBudget, RunTreeLedger } from './tree-budget.ts'

/** The lease is renewed this many times per period, so a lost beat or two does not end it. */
export const HEARTBEATS_PER_LEASE = 3

const RunReply = z.discriminatedUnion('type', [RunAcceptedMessage, ErrorMessage])

export interface RemoteRunOptions {
  bus: Bus
  subjects: Subjects
  clock: Clock
  /** The caller's host id, named in the request and in a cancellation. */
  hostId: string
  leaseMs: number
  ledger: RunTreeLedger
  runId: string
  agentId: string
  input: string | Message[]
  budget: RunBudget
  parentRunId?: string | undefined
  runPath?: string[] | undefined
  agentPath?: string[] | undefined
  /** The parent agent's key: its cancels of the child are signed (the child's policy lists it in `controllers`). */
  signer?: Signer | undefined
  signal?: AbortSignal | undefined
}

/**
 * The caller's side of a remote run: asks a host of the agent to start it, keeps its lease
 * alive with heartbeats, and waits for the result on the durable path. When the caller is
 * cancelled, the child is told to stop where it runs.
 */
export async function runRemote(options: RemoteRunOptions): Promise<RunResult> {
  const { bus, subjects, clock, agentId, runId, budget, signal } = options
  if (signal?.aborted) throw new AbortedError('The run was cancelled before it started.')
  // Listening for the result before asking: it can never be published before.
  const resultWait = await waitForResult(bus, subjects, runId)
  const resultPromise = resultWait.result
  let stopHeartbeat: (() => void) | undefined
  let onAbort: (() => void) | undefined
  try {
    const request: RunRequestMessage = {
      v: PROTOCOL_VERSION,
      type: 'run.request',
      runId,
      agentId,
      input: options.input as RunRequestMessage['input'],
      ...(options.parentRunId ? { parentRunId: options.parentRunId } : {}),
      runPath: options.runPath ?? [],
      ...(options.agentPath && options.agentPath.length > 0 ? { agentPath: options.agentPath } : {}),
      ...(budget.turns !== undefined ? { maxTurns: budget.turns } : {}),
      ...(budget.tokens !== undefined ? { maxTokens: budget.tokens } : {}),
      leaseMs: options.leaseMs,
      requestedBy: options.hostId,
    }
    let reply: Awaited<ReturnType<Bus['request']>>
    try {
      reply = await bus.request(subjects.agentRun(agentId), encodeMessage(request), {
        timeoutMs: 10_000,
        ...(signal ? { signal } : {}),
      })
    } catch (error) {
      if (BusNoRespondersError.is(error)) {
        throw new ChildRunError('AGENT_UNAVAILABLE', `No host serves agent "${agentId}" right now.`, { agentId })
      }
      // Cancelled while the request was out: a host may have started the child already.
      if (signal?.aborted) cancelRemote(options)
      throw error
    }
    const accepted = decodeMessage(reply.data, RunReply, { maxBytes: bus.maxPayload })
    if (!accepted.ok) throw accepted.error
    if (accepted.value.type === 'error') {
      throw new ChildRunError(accepted.value.error.code, accepted.value.error.message, { agentId })
    }
    const beat = () => {
      const message: RunHeartbeatMessage = { v: PROTOCOL_VERSION, type: 'run.heartbeat', runId, at: clock.now() }
      try {
        bus.publish(subjects.runHeartbeat(runId), encodeMessage(message))
      } catch {
        // Missing one beat is fine: the lease allows several.
      }
    }
    stopHeartbeat = repeat(clock, Math.max(50, Math.floor(options.leaseMs / HEARTBEATS_PER_LEASE)), beat)
    const cancelled = new Promise<never>((_, reject) => {
      onAbort = () => {
        // The parent stopped: stop the child where it runs, then report the cancellation.
        cancelRemote(options)
        reject(new AbortedError('The parent run was cancelled; the child was told to stop.'))
      }
      if (signal?.aborted) onAbort()
      else signal?.addEventListener('abort', onAbort, { once: true })
    })
    cancelled.catch(() => {})
    const message = await Promise.race([resultPromise, cancelled])
    options.ledger.countChild((options.runPath ?? [])[0], { turns: message.turns, tokens: message.usage.totalTokens })
    return fromResultMessage(message)
  } finally {
    stopHeartbeat?.()
    if (onAbort) signal?.removeEventListener('abort', onAbort)
    resultWait.stop()
  }
}

/** Tells the agent's hosts to stop the run (best effort: the lease ends it anyway). */
function cancelRemote(options: Pick<RemoteRunOptions, 'bus' | 'subjects' | 'agentId' | 'runId' | 'hostId' | 'signer'>): void {
  sendControl({
    bus: options.bus,
    ...(options.signer ? { signer: options.signer } : {}),
    agentId: options.agentId,
    subjects: options.subjects,
    request: { type: 'control.cancel', runId: options.runId, reason: 'the parent run was cancelled', from: options.hostId },
  }).catch(() => {})
}

function fromResultMessage(message: RunResultMessage): RunResult {
  const result: RunResult = {
    runId: message.runId,
    status: message.status,
    output: message.output,
    stopReason: undefined,
    error: message.error,
    turns: message.turns,
    usage: message.usage,
    messages: [],
    pendingSteering: [],
    ...(message.handoff ? { handoff: message.handoff as RunResult['handoff'] } : {}),
  }
  if (message.status !== 'done') {
    throw new ChildRunError(message.error?.code ?? 'CHILD_FAILED', message.error?.message ?? `The child run ${message.status}.`, {
      runId: message.runId,
      status: message.status,
    })
  }
  return result
}

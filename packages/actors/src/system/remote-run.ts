import { AbortedError, type Clock, type Message, type RunResult } from '@signalbox/core'
import { type Bus, BusNoRespondersError, BusTimeoutError, type Subjects } from '@signalbox/core/bus'
import { sleep, whenAborted } from '@signalbox/core/internal'
import {
  decodeMessage,
  ErrorMessage,
  encodeMessage,
  PROTOCOL_VERSION,
  RunAcceptedMessage,
  type RunHeartbeatMessage,
  type RunRequestMessage,
  RunResultMessage,
} from '@signalbox/core/protocol'
import { z } from 'zod/v4'
import { sendControl } from '../agents/clients.ts'
import type { Signer } from '../trust/sign.ts'
import { ChildRunError } from './child-run-error.ts'
import { repeat } from './repeat.ts'
import { waitForResult } from './run-results.ts'
import type { CarriedLimits, RunBudget, RunTreeLedger } from './tree-budget.ts'

/** The lease is renewed this many times per period, so a lost beat or two does not end it. */
export const HEARTBEATS_PER_LEASE = 3

const RunReply = z.discriminatedUnion('type', [RunAcceptedMessage, ErrorMessage])

/**
 * How a parent looks for a child it may have started before (a delegate call run again after a
 * crash or a takeover): `only` never starts it (nowhere to be found: `CHILD_LOST`); `first` starts
 * it when it is nowhere (it may never have been asked for).
 */
export type Reattach = 'only' | 'first'

export interface RemoteRunOptions {
  bus: Bus
  subjects: Subjects
  clock: Clock
  /** The caller's host id, named in the request and in a cancellation. */
  hostId: string
  leaseMs: number
  /** How long a child may be nowhere (no host answers its heartbeats, no result stored) before it is lost. */
  lostAfterMs: number
  ledger: RunTreeLedger
  runId: string
  agentId: string
  input: string | Message[]
  budget: RunBudget
  /** The limits of the tree, carried to the child's host. */
  limits?: CarriedLimits | undefined
  parentRunId?: string | undefined
  runPath?: string[] | undefined
  agentPath?: string[] | undefined
  reattach?: Reattach | undefined
  /** The parent agent's key: its cancels of the child are signed (the child's policy lists it in `controllers`). */
  signer?: Signer | undefined
  signal?: AbortSignal | undefined
  /** Once the child exists (a host accepted it, or it was found): a hand-off it follows is no longer pending. */
  onStarted?: (() => Promise<void>) | undefined
}

/**
 * The caller's side of a remote run: asks a host of the agent to start it (or finds it again),
 * keeps its lease alive with heartbeats, and waits for the result on the durable path. The
 * heartbeats are requests that the host running the child answers: when none has for
 * `lostAfterMs` and no result is stored, the child is lost (`CHILD_LOST`), never waited for
 * forever. When the caller is cancelled, the child is told to stop where it runs.
 */
export async function runRemote(options: RemoteRunOptions): Promise<RunResult> {
  const { bus, subjects, runId, signal } = options
  if (signal?.aborted) throw new AbortedError('The run was cancelled before it started.')
  // Listening for the result before asking (or looking): it can never be published unseen.
  const resultWait = await waitForResult(bus, subjects, runId)
  let stopBeats: (() => void) | undefined
  let stopWatching: (() => void) | undefined
  try {
    let found: RunResultMessage | 'running' | undefined
    if (options.reattach) {
      try {
        found = await findChild(options)
      } catch (error) {
        // Cancelled while looking: the child, wherever it is, is told to stop too.
        if (signal?.aborted) cancelRemote(options)
        throw error
      }
    }
    if (found === undefined) {
      if (options.reattach === 'only') {
        throw new ChildRunError(
          'CHILD_LOST',
          `The child run ${runId} of "${options.agentId}" is nowhere: no host runs it, none stores it, and no result of it is stored.`,
          { runId, agentId: options.agentId },
        )
      }
      await requestRun(options)
    }
    // The child exists (started, or found): it counts against the tree.
    options.ledger.countRuns(options.runPath ?? [], 1)
    void options.onStarted?.()
    const cancelled = new Promise<never>((_, reject) => {
      const onAbort = () => {
        // The parent stopped: stop the child where it runs, then report the cancellation.
        cancelRemote(options)
        reject(new AbortedError('The parent run was cancelled; the child was told to stop.'))
      }
      // One listener on a signal shared by many runs (see `whenAborted`).
      if (signal) stopWatching = whenAborted(signal, onAbort)
    })
    cancelled.catch(() => {})
    let message: RunResultMessage
    if (typeof found === 'object') {
      message = found
    } else {
      const beats = heartbeat(options)
      stopBeats = beats.stop
      message = await Promise.race([resultWait.result, cancelled, beats.lost, beats.stored])
    }
    options.ledger.countChild(options.runPath ?? [], {
      turns: message.turns,
      tokens: message.usage.totalTokens,
      runs: message.runs,
    })
    return fromResultMessage(message)
  } finally {
    stopBeats?.()
    stopWatching?.()
    resultWait.stop()
  }
}

/** Asks a host of the agent to start the run (a host that runs or stores it already attaches instead). */
async function requestRun(options: RemoteRunOptions, check = false): Promise<RunAcceptedMessage | undefined> {
  const { bus, subjects, agentId, runId, budget, signal } = options
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
    ...(options.limits && Object.keys(options.limits).length > 0 ? { limits: options.limits } : {}),
    ...(check ? { check: true as const } : {}),
  }
  let reply: Awaited<ReturnType<Bus['request']>>
  try {
    reply = await bus.request(subjects.agentRun(agentId), encodeMessage(request), {
      timeoutMs: 10_000,
      ...(signal ? { signal } : {}),
    })
  } catch (error) {
    if (BusNoRespondersError.is(error)) {
      if (check) return undefined
      throw new ChildRunError('AGENT_UNAVAILABLE', `No host serves agent "${agentId}" right now.`, { agentId })
    }
    // Cancelled while the request was out: a host may have started the child already.
    if (signal?.aborted) cancelRemote(options)
    if (check && BusTimeoutError.is(error)) return undefined
    throw error
  }
  const accepted = decodeMessage(reply.data, RunReply, { maxBytes: bus.maxPayload })
  if (!accepted.ok) throw accepted.error
  if (accepted.value.type === 'error') {
    if (check && accepted.value.error.code === 'RUN_NOT_FOUND') return undefined
    throw new ChildRunError(accepted.value.error.code, accepted.value.error.message, { agentId })
  }
  return accepted.value
}

/**
 * Looks for a child the parent may have started before: its stored result, else a host that
 * runs it (its heartbeat is answered) or stores it (a check request). With `only`, looks again
 * for up to `lostAfterMs` (the child may be between hosts: its host died, another takes it over).
 */
async function findChild(options: RemoteRunOptions): Promise<RunResultMessage | 'running' | undefined> {
  const { clock, signal, lostAfterMs } = options
  const until = clock.now() + (options.reattach === 'only' ? lostAfterMs : 0)
  for (let attempt = 0; ; attempt++) {
    const stored = await storedResult(options)
    if (stored) return stored
    if ((await beat(options, 2_000)) === 'answered') return 'running'
    if (await requestRun(options, true)) return 'running'
    if (clock.now() >= until) return undefined
    await sleep(Math.min(2_000, 250 * 2 ** attempt), { clock, ...(signal ? { signal } : {}) })
  }
}

/** The child's result as the stream stored it (`runs.<runId>.result`), if it ended already. */
async function storedResult(options: RemoteRunOptions): Promise<RunResultMessage | undefined> {
  const { bus, subjects, runId, signal } = options
  const stored = await bus.durableLast(subjects.runResult(runId), signal ? { signal } : {})
  if (stored === undefined) return undefined
  const decoded = decodeMessage(stored.data, RunResultMessage, { maxBytes: bus.maxPayload })
  return decoded.ok && decoded.value.runId === runId ? decoded.value : undefined
}

/** One heartbeat, as a request: `answered` when the host running the child replied. */
async function beat(options: RemoteRunOptions, timeoutMs: number): Promise<'answered' | 'nobody'> {
  const { bus, subjects, clock, runId, signal } = options
  const message: RunHeartbeatMessage = { v: PROTOCOL_VERSION, type: 'run.heartbeat', runId, at: clock.now() }
  try {
    const reply = await bus.request(subjects.runHeartbeat(runId), encodeMessage(message), {
      timeoutMs,
      ...(signal ? { signal } : {}),
    })
    const decoded = decodeMessage(reply.data, RunReply, { maxBytes: bus.maxPayload })
    return decoded.ok && decoded.value.type === 'run.accepted' ? 'answered' : 'nobody'
  } catch {
    // Nobody runs it right now (or the beat was lost): the caller decides how long that may last.
    return 'nobody'
  }
}

/**
 * Keeps the child's lease alive, HEARTBEATS_PER_LEASE beats per lease (the first a period after
 * the start). `lost` rejects once no host has answered for `lostAfterMs` and no result is stored;
 * `stored` resolves with a result found stored then (published before this parent's consumer
 * existed: a re-attach that a host answered from its store while the result was already out).
 */
function heartbeat(options: RemoteRunOptions): { lost: Promise<never>; stored: Promise<RunResultMessage>; stop(): void } {
  const { clock, leaseMs, lostAfterMs } = options
  const intervalMs = Math.max(50, Math.floor(leaseMs / HEARTBEATS_PER_LEASE))
  let stopped = false
  let lastAnswer = clock.now()
  let looking = false
  let reject!: (error: Error) => void
  const lost = new Promise<never>((_, r) => {
    reject = r
  })
  lost.catch(() => {})
  let found!: (result: RunResultMessage) => void
  const stored = new Promise<RunResultMessage>((resolve) => {
    found = resolve
  })
  const isLost = async () => {
    const result = await storedResult(options).catch(() => undefined)
    if (stopped) return
    if (result !== undefined) return found(result)
    if (clock.now() - lastAnswer < lostAfterMs) return
    // A host whose store holds the child: it is between hosts (a takeover is coming), or it ended
    // and its result is published again. Either way, not lost.
    let seen: RunAcceptedMessage | undefined
    try {
      seen = await requestRun(options, true)
    } catch (error) {
      if (!stopped) reject(error as Error)
      return
    }
    if (stopped) return
    if (seen) {
      lastAnswer = clock.now()
      return
    }
    reject(
      new ChildRunError(
        'CHILD_LOST',
        `The child run ${options.runId} of "${options.agentId}" was lost: no host has run it for ${lostAfterMs} ms and no result of it is stored.`,
        { runId: options.runId, agentId: options.agentId },
      ),
    )
  }
  // Each beat on its own: a slow answer never delays the next beat (the lease counts them).
  const stopRepeat = repeat(clock, intervalMs, () => {
    void beat(options, intervalMs).then((answer) => {
      if (answer === 'answered') lastAnswer = clock.now()
    })
    if (looking || clock.now() - lastAnswer < lostAfterMs) return
    looking = true
    void isLost().finally(() => {
      looking = false
    })
  })
  return {
    lost,
    stored,
    stop: () => {
      stopped = true
      stopRepeat()
    },
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

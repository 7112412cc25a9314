import { AbortedError, type AuditLog, type Clock, randomIds, systemClock, type Tool } from '@signalbox/core'
import { type Bus, createSubjects, type Subjects, type Subscription, usedApprovalsBucket } from '@signalbox/core/bus'
import { describeError, stringifyToolOutput, untilAborted } from '@signalbox/core/internal'
import {
  decodeMessage,
  ErrorMessage,
  encodeMessage,
  errorMessage,
  PROTOCOL_VERSION,
  ToolCallMessage,
  type ToolCatalogMessage,
  ToolDescribeMessage,
  type ToolDescriptionMessage,
  ToolListMessage,
  ToolResultMessage,
  type WireError,
} from '@signalbox/core/protocol'
import { z } from 'zod/v4'
import { toWireError } from '../requests/rejections.ts'
import { MAX_TIMER_MS } from '../requests/request-service.ts'
import { IdempotencyCache, type IdempotencyCacheOptions } from '../store/idempotency-cache.ts'
import type { TrustPolicy } from '../trust/policy.ts'
import type { ApprovalRefusalReason } from './approval-errors.ts'
import { ApprovalGate, needsApproval } from './approval-gate.ts'
import type { SharedApprovalLedger } from './used-approvals.ts'

export const TOOL_QUEUE_GROUP = 'signalbox-tools'

/** The request header that carries a call's idempotency key (`<runId>:<callId>`, see §8.3 of the protocol). */
export const IDEMPOTENCY_KEY_HEADER = 'Signalbox-Idempotency-Key'

/** At most this many validation issues are listed in a `TOOL_INVALID_ARGUMENTS` reply. */
const MAX_LISTED_ISSUES = 20

export interface ToolHostOptions {
  bus: Bus
  tools: Tool<any>[]
  subjects?: Subjects
  /** Hosts in the same queue group share the calls. Default `signalbox-tools`. */
  queue?: string
  clock?: Clock
  onCall?(call: { toolName: string; callId: string; agentId: string; runId: string }): void
  onResult?(call: { toolName: string; callId: string }, outcome: { ok: boolean; durationMs: number; error?: WireError }): void
  /** How many recent answers are kept by idempotency key, and how long (a retried call gets the first answer). */
  idempotency?: IdempotencyCacheOptions
  /**
   * Enforcing mode: a call of a tool that needs approval (its `needsApproval`, run here on the
   * validated arguments) runs only if it carries the reviewer's signed decision for exactly that
   * call, signed by a key `trust` allows for the tool, before its deadline, and not used for another
   * call (protocol §8.6). Anything else is refused (`APPROVAL_REQUIRED`, `APPROVAL_INVALID`) and
   * audited. Without it the host runs whatever it is sent: the approval gate is the agent's alone.
   */
  approvals?: HostApprovalOptions
  /** A call refused by the enforcing mode (it did not run). */
  onRefused?(
    call: { toolName: string; callId: string; agentId: string; runId: string },
    refusal: WireError & { reason: ApprovalRefusalReason },
  ): void
  /** Something the host could not do but that cost no caller its answer (an audit entry that could not be written). */
  onError?(error: unknown): void
  /** Named in the host's answer to a tool list request (`tool.catalog`, for logs). */
  hostId?: string
}

export interface HostApprovalOptions {
  /** Who may approve which tool (its `keys` and `reviewers`; the rest of a policy is not used here). */
  trust: TrustPolicy
  /**
   * How far apart the clocks of the agent (which set the deadline) and this host may be: a decision
   * is accepted until its deadline plus this, by the host's clock. Default 30 s.
   */
  clockSkewMs?: number
  /** Where refused calls are recorded (`tool.refused`), e.g. `busAuditLog(...)`. Default: nowhere. */
  audit?: AuditLog
  /**
   * Where the approvals used are remembered for the whole pool of hosts (the queue group) and
   * across restarts, so that a replayed decision is refused by any host, and an honest retry of the
   * same call at any host gets its answer without running the tool again. Default, on a NATS bus:
   * the JetStream KV bucket `usedApprovalsBucket(prefix)` (created if missing, entries kept 7 days;
   * a decision valid for longer is refused). `false`, and on the in-process bus: this process only.
   */
  ledger?: false | UsedApprovalLedgerOptions
}

export interface UsedApprovalLedgerOptions {
  /** The KV bucket. Default `usedApprovalsBucket(prefix)`: every host of a deployment shares it. */
  bucket?: string
  /** Copies of the bucket in a JetStream cluster. Default 1. */
  replicas?: 1 | 3 | 5
  /** How long entries are kept when this host creates the bucket (an existing one keeps its own). Default 7 days. */
  retentionMs?: number
}

export interface ToolHost {
  readonly ready: Promise<void>
  /** Calls running now, or waiting for the answer of the same call run before (not answered yet). */
  readonly running: number
  /**
   * Stops taking calls. Running calls are aborted and answered at once with a
   * `TOOL_HOST_STOPPED` error, so their callers do not wait for their timeout.
   */
  close(): void
}

type Reply = ToolResultMessage | ReturnType<typeof errorMessage>
type Outgoing = Reply | ToolDescriptionMessage | ToolCatalogMessage

/**
 * Serves tools on `tools.<name>` (request/reply, queue group), their descriptions on
 * `tools.<name>.describe`, and the list of them on `tools` (every host answers). Every failure is a
 * typed `error` reply; no input can crash the host.
 */
export function serveTools(options: ToolHostOptions): ToolHost {
  const { bus } = options
  const subjects = options.subjects ?? createSubjects()
  const clock = options.clock ?? systemClock
  const queue = options.queue ?? TOOL_QUEUE_GROUP
  const subscriptions: Subscription[] = []
  /** Stops of the calls not answered yet. */
  const running = new Set<() => void>()
  /** Answers by idempotency key: a call retried after a crash or a reconnect is answered, not run again. */
  const answers = new IdempotencyCache<Reply>({ clock, ...options.idempotency })
  /** Enforcing mode: gated calls run only with a verified approval, each approval once. */
  const ledger = options.approvals && sharedLedger(bus, subjects, clock, options.approvals.ledger)
  const gate =
    options.approvals &&
    new ApprovalGate<Reply>({
      trust: options.approvals.trust,
      ...(options.approvals.clockSkewMs !== undefined ? { clockSkewMs: options.approvals.clockSkewMs } : {}),
      ...(options.approvals.audit ? { audit: options.approvals.audit } : {}),
      ...(ledger ? { ledger } : {}),
      clock,
      retainMs: options.idempotency?.ttlMs ?? 10 * 60_000,
      onRefused: ({ toolName, callId, agentId, runId }, refusal) =>
        options.onRefused?.({ toolName, callId, agentId, runId }, refusal),
      ...(options.onError ? { onError: options.onError } : {}),
    })
  let closed = false
  /** Gated calls being admitted, or waiting for the answer of the same call run before (by another host). */
  let waiting = 0
  /** Aborted at close: calls waiting on the shared ledger stop waiting. */
  const closing = new AbortController()

  const send = (respond: (data: Uint8Array) => boolean, message: Outgoing) => {
    let data = encodeMessage(message)
    if (data.byteLength > bus.maxPayload) {
      data = encodeMessage(
        errorMessage(
          {
            code: 'TOOL_RESULT_TOO_LARGE',
            message: `The result is ${data.byteLength} bytes; the bus carries at most ${bus.maxPayload}. Return less.`,
          },
          message.type === 'tool.result' ? message.callId : message.type === 'error' ? message.inReplyTo : undefined,
        ),
      )
    }
    try {
      respond(data)
    } catch {
      // The caller is gone (closed bus); nothing else to do.
    }
  }
  const safely = (fn: () => void) => {
    try {
      fn()
    } catch {
      // An observer callback must not cost the caller its reply.
    }
  }
  const catalog: ToolCatalogMessage = {
    v: PROTOCOL_VERSION,
    type: 'tool.catalog',
    ...(options.hostId ? { hostId: options.hostId } : {}),
    tools: [],
  }
  for (const tool of options.tools) {
    const description: ToolDescriptionMessage = {
      v: PROTOCOL_VERSION,
      type: 'tool.description',
      name: tool.name,
      description: tool.description,
      parameters: tool.parameters,
      ...(tool.needsApproval === undefined ? {} : { needsApproval: tool.needsApproval !== false }),
      ...(tool.timeoutMs === undefined ? {} : { timeoutMs: tool.timeoutMs }),
    }
    const { v: _v, type: _type, ...listed } = description
    catalog.tools.push(listed)
    subscriptions.push(
      bus.subscribe(
        subjects.toolDescribe(tool.name),
        (message) => {
          const decoded = decodeMessage(message.data, ToolDescribeMessage, { maxBytes: bus.maxPayload })
          send((data) => message.respond(data), decoded.ok ? description : errorMessage(toWireError(decoded.error)))
        },
        { queue },
      ),
    )
    subscriptions.push(
      bus.subscribe(
        subjects.tool(tool.name),
        async (message) => {
          const respond = (data: Uint8Array) => message.respond(data)
          const decoded = decodeMessage(message.data, ToolCallMessage, { maxBytes: bus.maxPayload })
          if (!decoded.ok) return send(respond, errorMessage(toWireError(decoded.error)))
          const call = decoded.value
          if (call.toolName !== tool.name) {
            return send(
              respond,
              errorMessage(
                toWireError({ code: 'TOOL_UNKNOWN', message: `This subject serves "${tool.name}", not "${call.toolName}".` }),
                call.callId,
              ),
            )
          }
          if (closed) {
            return send(
              respond,
              errorMessage({ code: 'TOOL_HOST_STOPPED', message: `The tool host of "${tool.name}" is stopping.` }, call.callId),
            )
          }
          const validation = tool.validate(call.arguments)
          if (!validation.ok) {
            // Bounded: a reply the caller cannot decode (message > 4096) would hide the real problem.
            const listed = validation.issues.slice(0, MAX_LISTED_ISSUES).map((i) => `- ${i}`)
            if (validation.issues.length > MAX_LISTED_ISSUES)
              listed.push(`- ... and ${validation.issues.length - MAX_LISTED_ISSUES} more`)
            return send(
              respond,
              errorMessage(
                toWireError({
                  code: 'TOOL_INVALID_ARGUMENTS',
                  message: `Invalid arguments for "${tool.name}":\n${listed.join('\n')}`,
                  details: { issues: validation.issues.slice(0, MAX_LISTED_ISSUES) },
                }),
                call.callId,
              ),
            )
          }
          if (call.deadline <= clock.now()) {
            // Past its deadline already (queued, or a slow network): do not start it at all.
            return send(
              respond,
              errorMessage(
                { code: 'TOOL_TIMEOUT', message: `"${tool.name}" arrived after its deadline; it was not started.` },
                call.callId,
              ),
            )
          }
          const key = message.headers?.[IDEMPOTENCY_KEY_HEADER]
          let remember: ((reply: Reply) => void) | undefined
          if (gate !== undefined && (await needsApproval(tool, validation.value))) {
            waiting++
            let admitted: Awaited<ReturnType<typeof gate.admit>>
            try {
              admitted = await gate.admit(tool.name, call, key || `${call.runId}:${call.callId}`, closing.signal)
              // Refused, or the same call again: its answer (maybe once another host records it).
              if (admitted.kind === 'answer') return send(respond, await admitted.reply)
            } finally {
              waiting--
            }
            remember = admitted.settle
          } else if (key) {
            const first = answers.run(key, () => new Promise<Reply>((resolve) => (remember = resolve)))
            // The same call again: the first call's answer (once it has one), the tool is not run.
            if (first.replayed) return send(respond, await first.promise)
          }
          const started = clock.now()
          safely(() => options.onCall?.({ toolName: tool.name, callId: call.callId, agentId: call.agentId, runId: call.runId }))
          const controller = new AbortController()
          let answered = false
          const answer = (reply: Reply) => {
            if (answered) return
            answered = true
            running.delete(stopCall)
            remember?.(reply)
            send(respond, reply)
            const ok = reply.type === 'tool.result'
            safely(() =>
              options.onResult?.(
                { toolName: tool.name, callId: call.callId },
                { ok, durationMs: clock.now() - started, ...(reply.type === 'error' ? { error: reply.error } : {}) },
              ),
            )
          }
          const fail = (error: WireError) => answer(errorMessage(error, call.callId))
          // Answered at once, even if the tool ignores its signal: the caller must not wait for its timeout.
          const stopCall = () => {
            fail({
              code: 'TOOL_HOST_STOPPED',
              message: `The tool host stopped while running "${tool.name}"; the call was aborted and may or may not have taken effect.`,
            })
            controller.abort(new AbortedError('the tool host is stopping'))
          }
          running.add(stopCall)
          // Clamped: a timer past 2^31-1 ms fires at once in Node (a far-off deadline would time out now).
          const timer = clock.setTimeout(
            () => {
              fail({
                code: 'TOOL_TIMEOUT',
                message: `"${tool.name}" did not finish before its deadline on the host; it was aborted.`,
              })
              controller.abort(new AbortedError('the call passed its deadline'))
            },
            Math.min(MAX_TIMER_MS, Math.max(0, call.deadline - clock.now())),
          )
          try {
            const work = Promise.resolve().then(() =>
              tool.execute(validation.value, {
                signal: controller.signal,
                callId: call.callId,
                agentId: call.agentId,
                runId: call.runId,
                runPath: [],
                clock,
                ids: randomIds,
                audit: { record: () => {} },
                emit: () => {},
              }),
            )
            const output = await untilAborted(work, controller.signal)
            answer({ v: PROTOCOL_VERSION, type: 'tool.result', callId: call.callId, output: stringifyToolOutput(output) })
          } catch (error) {
            // After a stop or the deadline the answer is already out; this only covers a throwing tool.
            fail(toWireError({ code: 'TOOL_FAILED', message: describeError(error) }))
          } finally {
            running.delete(stopCall)
            clock.clearTimeout(timer)
          }
        },
        { queue },
      ),
    )
  }
  // Every host answers a tool list request (no queue group): the asker gathers them all.
  subscriptions.push(
    bus.subscribe(subjects.toolCatalog(), (message) => {
      const decoded = decodeMessage(message.data, ToolListMessage, { maxBytes: bus.maxPayload })
      send((data) => message.respond(data), decoded.ok ? catalog : errorMessage(toWireError(decoded.error)))
    }),
  )

  return {
    ready: Promise.all(subscriptions.map((s) => s.ready)).then(() => {}),
    get running() {
      return running.size + waiting
    },
    close() {
      if (closed) return
      closed = true
      closing.abort()
      for (const subscription of subscriptions) subscription.unsubscribe()
      for (const stopCall of [...running]) stopCall()
    },
  }
}

/** An answer read back from the shared ledger (what this host sent for the call). */
const StoredReply = z.discriminatedUnion('type', [ToolResultMessage, ErrorMessage])

/**
 * The pool's ledger of used approvals: a JetStream KV bucket when the bus is a NATS connection
 * (loaded only then, so the in-process bus needs no NATS client), else none.
 */
function sharedLedger(
  bus: Bus,
  subjects: Subjects,
  clock: Clock,
  options: false | UsedApprovalLedgerOptions | undefined,
): SharedApprovalLedger<Reply> | undefined {
  const connection = (bus as { connection?: unknown }).connection
  if (options === false || typeof connection !== 'object' || connection === null) return undefined
  const bucket = options?.bucket ?? usedApprovalsBucket(subjects.prefix)
  const loaded = import('./kv-used-approvals.ts').then(({ kvUsedApprovals }) =>
    kvUsedApprovals<Reply>({
      connection: connection as Parameters<typeof kvUsedApprovals>[0]['connection'],
      bucket,
      ...(options?.replicas ? { replicas: options.replicas } : {}),
      ...(options?.retentionMs ? { retentionMs: options.retentionMs } : {}),
      clock,
      decode: (value) => {
        const parsed = StoredReply.safeParse(value)
        return parsed.success ? (parsed.data as Reply) : undefined
      },
    }),
  )
  return {
    retentionMs: async (signal) => (await loaded).retentionMs(signal),
    claim: async (requestId, identity, claimOptions) => (await loaded).claim(requestId, identity, claimOptions),
  }
}

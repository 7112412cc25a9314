import { createHash } from 'node:crypto'
import type { AuditEntry, AuditLog } from '@signalbox/core'
import { type Bus, createSubjects, type Subjects } from '@signalbox/core/bus'
import { AuditMessage, canonicalJson, decodeMessage, encodeMessage, PROTOCOL_VERSION } from '@signalbox/core/protocol'

/**
 * What one writer of an entry may add differently from another: when it let the call go by its own
 * clock, its signature over that, and the evidence and claimed name it holds. The signer's key is
 * not among them: an entry with the same facts under another key is another entry, so a key that
 * is not the agent's cannot take the place of the agent's entry by writing first.
 */
const WRITER_FIELDS = new Set(['releasedAt', 'signature', 'evidence', 'claimed'])

/**
 * Refused replies: the name one claimed is what tells it from another refused in the same
 * millisecond by the same writer for the same reason (forged decisions claiming `alice`, then
 * `system`), so it is part of their id; without it the stream kept the first and dropped the rest.
 */
const REFUSALS = new Set<AuditEntry['kind']>(['approval.rejected', 'question.rejected'])

/**
 * An entry's message id on the stream: a hash of what was decided, on which call, by whom and when,
 * and the key that signs it. A retried write is stored once; so is a decision applied again by the
 * host that took the run over (the first owner applied it and lost the run before its checkpoint
 * said so): one decision, one entry.
 */
function auditMessageId(entry: AuditEntry): string {
  const refusal = REFUSALS.has(entry.kind)
  const facts = Object.fromEntries(
    Object.entries(entry).filter(([key]) => !WRITER_FIELDS.has(key) || (refusal && key === 'claimed')),
  )
  return `audit-${createHash('sha256').update(canonicalJson(facts)).digest('hex').slice(0, 32)}`
}

/**
 * The audit trail on the durable path (JetStream on NATS): who decided what, when, and what
 * they saw. One entry per fact, within the stream's duplicate window (see `auditMessageId`).
 */
export function busAuditLog(options: { bus: Bus; subjects?: Subjects; signal?: AbortSignal }): AuditLog {
  const subjects = options.subjects ?? createSubjects()
  return {
    async record(entry) {
      const message: AuditMessage = { v: PROTOCOL_VERSION, type: 'audit', entry: { ...entry } }
      await options.bus.durablePublish(subjects.audit(entry.agentId, entry.kind), encodeMessage(message), {
        msgId: auditMessageId(entry),
        ...(options.signal ? { signal: options.signal } : {}),
      })
    },
  }
}

export interface AuditFilter {
  agentId?: string
  runId?: string
  toolName?: string
  kind?: AuditEntry['kind']
  /** Only entries decided at or after this time (epoch ms). */
  since?: number
}

export function matchesAudit(entry: AuditEntry, filter: AuditFilter): boolean {
  if (filter.agentId !== undefined && entry.agentId !== filter.agentId) return false
  if (filter.runId !== undefined && entry.runId !== filter.runId && !entry.runPath.includes(filter.runId)) return false
  if (filter.toolName !== undefined && entry.toolName !== filter.toolName) return false
  if (filter.kind !== undefined && entry.kind !== filter.kind) return false
  if (filter.since !== undefined && entry.decidedAt < filter.since) return false
  return true
}

/**
 * Reads the stored audit trail, oldest first. With `follow`, keeps calling `onEntry` for new
 * entries until the signal aborts; otherwise resolves once every entry stored when the read began
 * has been handed over (the consumer's `caughtUp`) and the log has then been quiet for `idleMs`.
 * The quiet time alone is not the end: under load, the gap between two batches of the replay can
 * be longer than it, and the trail read would stop short.
 */
export function readAudit(options: {
  bus: Bus
  subjects?: Subjects
  filter?: AuditFilter
  follow?: boolean
  idleMs?: number
  onEntry?: (entry: AuditEntry) => void
  signal?: AbortSignal
}): Promise<AuditEntry[]> {
  const subjects = options.subjects ?? createSubjects()
  const filter = options.filter ?? {}
  const entries: AuditEntry[] = []
  const idleMs = options.idleMs ?? 300
  return new Promise((resolve, reject) => {
    let timer: ReturnType<typeof setTimeout> | undefined
    let done = false
    let caughtUp = false
    const finish = () => {
      if (done) return
      done = true
      if (timer) clearTimeout(timer)
      options.signal?.removeEventListener('abort', finish)
      subscription.unsubscribe()
      resolve(entries)
    }
    const arm = () => {
      if (options.follow || done || !caughtUp) return
      if (timer) clearTimeout(timer)
      timer = setTimeout(finish, idleMs)
    }
    const subscription = options.bus.durableConsume(
      subjects.audit(filter.agentId),
      (message) => {
        message.ack()
        if (done) return
        const decoded = decodeMessage(message.data, AuditMessage, { maxBytes: options.bus.maxPayload })
        if (decoded.ok && matchesAudit(decoded.value.entry, filter)) {
          entries.push(decoded.value.entry)
          options.onEntry?.(decoded.value.entry)
        }
        arm()
      },
      { deliverAll: true, purpose: 'audit' },
    )
    subscription.ready.then(
      () =>
        // A bus without `caughtUp` hands over what it held before `ready`.
        (subscription.caughtUp ?? Promise.resolve()).then(() => {
          caughtUp = true
          arm()
        }),
      (error) => {
        done = true
        if (timer) clearTimeout(timer)
        options.signal?.removeEventListener('abort', finish)
        subscription.unsubscribe()
        reject(error)
      },
    )
    // An already aborted signal never fires: finish with what is there (nothing yet).
    if (options.signal?.aborted) finish()
    else options.signal?.addEventListener('abort', finish, { once: true })
  })
}

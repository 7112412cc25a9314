import { createHash } from 'node:crypto'
import type { AuditEntry, AuditLog } from '@signalbox/core'
import { type Bus, createSubjects, type Subjects } from '@signalbox/core/bus'
import { AuditMessage, canonicalJson, decodeMessage, encodeMessage, PROTOCOL_VERSION } from '@signalbox/core/protocol'

/**
 * The audit trail on the durable path (JetStream on NATS): who decided what, when, and what
 * they saw. Each entry's id is a hash of its content, so a retried write is stored once.
 */
export function busAuditLog(options: { bus: Bus; subjects?: Subjects; signal?: AbortSignal }): AuditLog {
  const subjects = options.subjects ?? createSubjects()
  return {
    async record(entry) {
      const message: AuditMessage = { v: PROTOCOL_VERSION, type: 'audit', entry: { ...entry } }
      const msgId = `audit-${createHash('sha256').update(canonicalJson(entry)).digest('hex').slice(0, 32)}`
      await options.bus.durablePublish(subjects.audit(entry.agentId, entry.kind), encodeMessage(message), {
        msgId,
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
 * entries until the signal aborts; otherwise resolves once the log has been quiet for `idleMs`.
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
    const finish = () => {
      if (done) return
      done = true
      if (timer) clearTimeout(timer)
      options.signal?.removeEventListener('abort', finish)
      subscription.unsubscribe()
      resolve(entries)
    }
    const arm = () => {
      if (options.follow || done) return
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
    subscription.ready.then(arm, (error) => {
      done = true
      if (timer) clearTimeout(timer)
      options.signal?.removeEventListener('abort', finish)
      subscription.unsubscribe()
      reject(error)
    })
    // An already aborted signal never fires: finish with what is there (nothing yet).
    if (options.signal?.aborted) finish()
    else options.signal?.addEventListener('abort', finish, { once: true })
  })
}

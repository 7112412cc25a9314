import type { AuditEntry, AuditLog } from '@signalbox/core'
import type { Bus, Subjects } from '@signalbox/core/bus'
import { busAuditLog } from '../audit/bus-audit.ts'
import type { Signer } from '../trust/sign.ts'
import { signedAuditLog } from '../trust/signed-audit.ts'

/** Requests whose agent sink is kept for late replies (oldest dropped first). */
const MAX_SINKS = 10_000

/** The agent's sink for one request's refused replies (`ReviewOptions.rejected`, `AnswerOptions.rejected`). */
export type RejectedSink = (reply: unknown, reason: string, actor?: string) => void

/**
 * Where a refused reply (a forged, mismatched or late decision or answer) is recorded, for the
 * remote reviewer and the remote answerer alike: by the agent that asked, through the sink it
 * gave with the request (its events and its audit log, as every other outcome of the request), or,
 * when the caller gave none (not an agent), in the caller's audit log. Either way once: the
 * requester calls `record` only for rejections reported one by one (a flood is only counted).
 */
export class RejectedReplies {
  readonly #sinks = new Map<string, RejectedSink>()
  readonly #fallback: () => AuditLog | undefined

  /** `fallback`: the audit log used when no agent sink is known for a request (created on first use). */
  constructor(fallback: () => AuditLog | undefined) {
    this.#fallback = fallback
  }

  /** Remembers the agent's sink for `id` (kept after the request settles: a late reply is still the agent's to record). */
  keep(id: string, sink: RejectedSink | undefined): void {
    if (sink === undefined) return
    this.#sinks.delete(id)
    this.#sinks.set(id, sink)
    if (this.#sinks.size > MAX_SINKS) this.#sinks.delete(this.#sinks.keys().next().value as string)
  }

  /**
   * Records one refused reply; `entry` builds the audit entry when this side must write it.
   * `actor`: who provably sent it (a checking side's policy name for the key), audited instead of
   * the name the reply claims. Returns whether the agent recorded it (then the agent also emitted
   * its event). Never throws.
   */
  record(id: string, reply: unknown, reason: string, actor: string | undefined, entry: () => AuditEntry): boolean {
    const sink = this.#sinks.get(id)
    try {
      if (sink !== undefined) {
        sink(reply, reason, actor)
        return true
      }
      const log = this.#fallback()
      if (log !== undefined) Promise.resolve(log.record(entry())).catch(() => {})
    } catch {
      // Recording is best effort: a failing audit log or sink must not stop the wait for a valid reply.
    }
    return sink !== undefined
  }
}

/**
 * The remote reviewer's and answerer's record of refused replies: in `audit` when given, nowhere
 * with `false`, else in the audit trail on the bus (signed with the agent's key when it has one),
 * opened on first use.
 */
export function rejectedReplies(
  audit: AuditLog | false | undefined,
  onBus: { bus: Bus; subjects: Subjects; signer: Signer | undefined },
): RejectedReplies {
  let log: AuditLog | undefined
  return new RejectedReplies(() => {
    if (audit === false) return undefined
    log ??= audit ?? defaultAudit(onBus.bus, onBus.subjects, onBus.signer)
    return log
  })
}

/** The audit trail on the bus, signed with the agent's key when it has one. */
function defaultAudit(bus: Bus, subjects: Subjects, signer: Signer | undefined): AuditLog {
  const log = busAuditLog({ bus, subjects })
  return signer ? signedAuditLog({ log, signer }) : log
}

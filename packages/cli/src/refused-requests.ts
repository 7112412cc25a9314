/**
 * What `signalbox console` prints about approval requests it refused unseen (not signed by a
 * trusted agent). Requests already in the stream when the console started (a stream keeps every
 * unsigned request of earlier runs) are counted and said in one line per reason once they stop
 * coming; a request made after the start gets its own line, as it happens.
 */

/** Quiet time after the last refused old request before the count is printed. */
export const BACKLOG_QUIET_MS = 1_000

export interface RefusedRequests {
  refused(requestId: string, reason: string, requestedAt: number | undefined): void
  /** Prints what is still counted (on stop). */
  flush(): void
}

export function reportRefusedRequests(options: {
  /** Requests made before this (epoch ms) are the stream's backlog. */
  startedAt: number
  print(line: string): void
  quietMs?: number
}): RefusedRequests {
  const quietMs = options.quietMs ?? BACKLOG_QUIET_MS
  const backlog = new Map<string, number>()
  let timer: ReturnType<typeof setTimeout> | undefined
  const flush = () => {
    if (timer) clearTimeout(timer)
    timer = undefined
    for (const [reason, count] of backlog) {
      options.print(
        `refused ${count} approval request${count === 1 ? '' : 's'} already in the stream when the console started, unseen: ${reason}`,
      )
    }
    backlog.clear()
  }
  return {
    refused(requestId, reason, requestedAt) {
      if (requestedAt !== undefined && requestedAt < options.startedAt) {
        backlog.set(reason, (backlog.get(reason) ?? 0) + 1)
        if (timer) clearTimeout(timer)
        timer = setTimeout(flush, quietMs)
        timer.unref?.()
        return
      }
      flush()
      options.print(`refused approval request ${requestId} unseen: ${reason}`)
    },
    flush,
  }
}

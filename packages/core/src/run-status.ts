/** The statuses a run ends with: it answered (`done`), it failed, or it was cancelled. */
export const FINISHED_STATUSES = ['done', 'failed', 'cancelled'] as const

/** How a run ended. */
export type RunStatus = (typeof FINISHED_STATUSES)[number]

/** Whether `status` (a run's, a stored run's, one read off the bus) is one a run ends with. */
export function isFinished(status: unknown): status is RunStatus {
  return (FINISHED_STATUSES as readonly unknown[]).includes(status)
}

/** The status a run ended with: `status` when it is one, else `failed` (it stopped without saying how). */
export function finishedStatus(status: unknown): RunStatus {
  return isFinished(status) ? status : 'failed'
}

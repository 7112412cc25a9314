import { describe, expect, it } from 'vitest'
import { FINISHED_STATUSES, finishedStatus, isFinished } from '../src/run-status.ts'
import { FINISHED_RUN_STATUSES, StoredRunStatus } from '../src/store/checkpoint.ts'

describe('finished run statuses (one list for the loop, the store, the wire and the console)', () => {
  it('done, failed and cancelled end a run; nothing else does', () => {
    for (const status of ['done', 'failed', 'cancelled']) expect(isFinished(status)).toBe(true)
    for (const status of ['running', 'waiting', 'idle', '', undefined, null, 'DONE']) expect(isFinished(status)).toBe(false)
  })

  it('a run that stopped without a finished status counts as failed', () => {
    expect(finishedStatus('cancelled')).toBe('cancelled')
    expect(finishedStatus('running')).toBe('failed')
    expect(finishedStatus(undefined)).toBe('failed')
  })

  it('the store lists the same ones', () => {
    expect(FINISHED_RUN_STATUSES).toEqual(FINISHED_STATUSES)
    expect(StoredRunStatus.options.filter((status) => isFinished(status))).toEqual([...FINISHED_STATUSES])
  })
})

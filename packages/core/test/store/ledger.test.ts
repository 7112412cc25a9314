import { describe, expect, it } from 'vitest'
import {
  findCall,
  finishCall,
  idempotencyKey,
  type LedgerEntry,
  OUTCOME_UNKNOWN,
  outcomeUnknownText,
  pruneLedger,
  resumeToolCall,
  startCall,
} from '../../src/store/ledger.ts'

const executed = { output: '{"dropped":true}', isError: false, outcome: 'executed' }

describe('tool-call ledger', () => {
  it('records started before and finished with the result after, keyed by call', () => {
    let ledger: LedgerEntry[] = []
    ledger = startCall(ledger, { runId: 'run_1', callId: 'call_a', toolName: 'drop_claw', at: 10 })
    ledger = startCall(ledger, { runId: 'run_1', callId: 'call_b', toolName: 'lookup', at: 11 })
    expect(findCall(ledger, 'call_a')).toEqual({
      state: 'started',
      callId: 'call_a',
      toolName: 'drop_claw',
      idempotencyKey: 'run_1:call_a',
      startedAt: 10,
    })
    ledger = finishCall(ledger, 'call_a', executed, 20)
    expect(findCall(ledger, 'call_a')).toMatchObject({ state: 'finished', finishedAt: 20, result: executed })
    expect(findCall(ledger, 'call_b')?.state).toBe('started')
    expect(() => finishCall(ledger, 'call_zz', executed, 30)).toThrow('call "call_zz" finished without having started')
    expect(pruneLedger(ledger, ['call_b']).map((entry) => entry.callId)).toEqual(['call_b'])
  })

  it('gives each call of each run its own idempotency key', () => {
    expect(idempotencyKey('run_1', 'call_a')).not.toBe(idempotencyKey('run_1', 'call_b'))
    expect(idempotencyKey('run_1', 'call_a')).not.toBe(idempotencyKey('run_2', 'call_a'))
    expect(idempotencyKey('run_1', 'call_a')).toBe(idempotencyKey('run_1', 'call_a'))
  })
})

describe('resumeToolCall', () => {
  const started = startCall([], { runId: 'run_1', callId: 'call_a', toolName: 'drop_claw', at: 10 })[0] as LedgerEntry
  const finished = finishCall([started], 'call_a', executed, 20)[0] as LedgerEntry

  it('runs a call that never started', () => {
    expect(resumeToolCall(undefined, { name: 'drop_claw' })).toEqual({ action: 'run', reason: 'not_started' })
  })

  it('uses the recorded result of a finished call, idempotent or not', () => {
    expect(resumeToolCall(finished, { name: 'drop_claw' })).toEqual({ action: 'use_recorded', result: executed })
    expect(resumeToolCall(finished, { name: 'drop_claw', idempotent: true })).toEqual({
      action: 'use_recorded',
      result: executed,
    })
  })

  it('re-runs a call cut off mid-way only when the tool is idempotent, with the same key', () => {
    expect(resumeToolCall(started, { name: 'drop_claw', idempotent: true })).toEqual({
      action: 'run',
      reason: 'idempotent_retry',
      idempotencyKey: 'run_1:call_a',
    })
  })

  it('otherwise tells the model the outcome is unknown, and why', () => {
    const decision = resumeToolCall(started, { name: 'drop_claw' })
    expect(decision).toEqual({
      action: 'report_unknown',
      result: { output: outcomeUnknownText('drop_claw'), isError: true, outcome: OUTCOME_UNKNOWN },
    })
    expect(outcomeUnknownText('drop_claw')).toContain('"drop_claw" is unknown')
    expect(outcomeUnknownText('drop_claw')).toContain('not declared idempotent')
    expect(resumeToolCall(started, { name: 'drop_claw', idempotent: false }).action).toBe('report_unknown')
  })
})

import { readFileSync } from 'node:fs'
import { sampleCheckpoint } from '@signalbox/core/testing'
import { describe, expect, it } from 'vitest'
import { CheckpointError, decodeCheckpoint, encodeCheckpoint } from '../../src/store/index.ts'

const fixture = (name: string) => readFileSync(new URL(`./fixtures/${name}`, import.meta.url), 'utf8')

function decodeError(runId: string, data: string | Uint8Array): CheckpointError {
  try {
    decodeCheckpoint(runId, data)
  } catch (error) {
    expect(error).toBeInstanceOf(CheckpointError)
    return error as CheckpointError
  }
  throw new Error('expected decodeCheckpoint to throw')
}

describe('decodeCheckpoint', () => {
  it('reads the frozen v2 samples (a run waiting on an approval, with a lease; a parked run)', () => {
    const checkpoint = decodeCheckpoint('run_1', fixture('checkpoint-v2.json'))
    expect(checkpoint.pending.approvals[0]).toMatchObject({
      requestId: 'request_1',
      toolName: 'drop_claw',
      deadline: 1_700_000_060_000,
    })
    expect(checkpoint.lease).toEqual({ owner: 'host-a', epoch: 1, expiresAt: 1_700_000_030_000 })
    expect(checkpoint.transcript).toEqual({ length: 3 })
    const parked = decodeCheckpoint('run_1', fixture('checkpoint-v2-parked.json'))
    expect(parked.status).toBe('parked')
    expect(parked.parked).toEqual({
      code: 'RUN_TRANSCRIPT_GAP',
      message: 'Run "run_1": the message log has no message 2 of the 3 the checkpoint counts.',
      by: 'host-b',
      at: 1_700_000_040_000,
    })
    expect(parked.lease).toBeUndefined()
  })

  it('round-trips what it encodes, from bytes too', () => {
    const checkpoint = sampleCheckpoint({ status: 'running' })
    expect(decodeCheckpoint('run_1', new TextEncoder().encode(encodeCheckpoint(checkpoint)))).toEqual(checkpoint)
  })

  it('refuses the frozen negative samples with stable codes naming the run', () => {
    const truncated = decodeError('run_1', fixture('checkpoint-v2-truncated.rejected.json'))
    expect(truncated.code).toBe('CHECKPOINT_TRUNCATED')
    expect(truncated.message).toMatch(/^Run "run_1": the stored checkpoint is truncated/)
    const future = decodeError('run_1', fixture('checkpoint-v3.rejected.json'))
    expect(future.code).toBe('CHECKPOINT_UNSUPPORTED_VERSION')
    expect(future.message).toBe(
      'Run "run_1": checkpoint schema version 3 is not supported; this signalbox reads version 2 (written by a newer signalbox: upgrade this process).',
    )
    expect(future.details).toMatchObject({ runId: 'run_1', version: 3, supported: 2 })
    // What a pre-release signalbox wrote (version 1) is refused the same way, never upgraded.
    const older = decodeError('run_1', fixture('checkpoint-v1.rejected.json'))
    expect(older.code).toBe('CHECKPOINT_UNSUPPORTED_VERSION')
    expect(older.message).toBe(
      'Run "run_1": checkpoint schema version 1 is not supported; this signalbox reads version 2 (written by an older signalbox: finish or delete the run with the version that stored it).',
    )
    expect(older.details).toMatchObject({ runId: 'run_1', version: 1, supported: 2 })
  })

  it('tells an empty file, garbage, bad UTF-8, a non-object and bad fields apart', () => {
    expect(decodeError('r', '').code).toBe('CHECKPOINT_TRUNCATED')
    expect(decodeError('r', '{"v":1,"type":"run.chec').code).toBe('CHECKPOINT_TRUNCATED')
    expect(decodeError('r', 'v=1;type=checkpoint').code).toBe('CHECKPOINT_INVALID_JSON')
    expect(decodeError('r', new Uint8Array([0x7b, 0xff, 0xfe, 0x7d])).code).toBe('CHECKPOINT_INVALID_JSON')
    expect(decodeError('r', '[1,2]').code).toBe('CHECKPOINT_INVALID')
    expect(decodeError('r', '{"type":"run.checkpoint"}').code).toBe('CHECKPOINT_UNSUPPORTED_VERSION')
    const bad = decodeError('run_1', JSON.stringify({ ...sampleCheckpoint(), status: 'sleeping', transcript: { length: -1 } }))
    expect(bad.code).toBe('CHECKPOINT_INVALID')
    expect(bad.message).toContain('status')
    expect(bad.message).toContain('transcript.length')
  })

  it('refuses a checkpoint stored under another run id', () => {
    const error = decodeError('run_2', encodeCheckpoint(sampleCheckpoint({ runId: 'run_1' })))
    expect(error.code).toBe('CHECKPOINT_INVALID')
    expect(error.message).toBe('Run "run_2": the stored checkpoint belongs to run "run_1".')
  })
})

describe('decodeCheckpoint on a checkpoint cut at every length', () => {
  it('calls every proper prefix truncated, never invalid', () => {
    const text = encodeCheckpoint(sampleCheckpoint())
    const codes = new Set<string>()
    for (let length = 1; length < text.length; length++) codes.add(decodeError('run_1', text.slice(0, length)).code)
    expect([...codes]).toEqual(['CHECKPOINT_TRUNCATED'])
  })
})

import { formatIssues } from '../schema.ts'
import { CHECKPOINT_VERSION, Checkpoint } from './checkpoint.ts'
import { CheckpointError } from './errors.ts'

const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

/** The stored form of a checkpoint. Checked first: a bad one is refused now, not found unreadable at resume. */
export function encodeCheckpoint(checkpoint: Checkpoint): string {
  const parsed = Checkpoint.safeParse(checkpoint)
  if (!parsed.success) {
    const issues = formatIssues(parsed.error).slice(0, 10)
    const runId = typeof checkpoint?.runId === 'string' ? checkpoint.runId : '(no run id)'
    throw new CheckpointError(
      'CHECKPOINT_INVALID',
      runId,
      `refusing to store a checkpoint that does not match schema v${CHECKPOINT_VERSION}: ${issues.join('; ')}`,
      {
        details: { issues },
      },
    )
  }
  return JSON.stringify(checkpoint)
}

/**
 * Reads a stored checkpoint of `runId`. Throws a `CheckpointError` naming the run: truncated,
 * not JSON, an unknown version, fields that do not match, or a checkpoint of another run.
 */
export function decodeCheckpoint(runId: string, data: string | Uint8Array): Checkpoint {
  let text: string
  try {
    text = typeof data === 'string' ? data : decoder.decode(data)
  } catch (cause) {
    throw new CheckpointError('CHECKPOINT_INVALID_JSON', runId, 'the stored checkpoint is not UTF-8 text.', { cause })
  }
  if (text.trim() === '') throw new CheckpointError('CHECKPOINT_TRUNCATED', runId, 'the stored checkpoint is empty.')
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (cause) {
    const message = (cause as Error).message
    // A cut-off document fails at its very end: V8 says "end of JSON input", or names a position
    // that is the length of the text ("Unterminated string…", "Expected … at position N").
    const position = /at position (\d+)/.exec(message)
    const truncated = /end of JSON input/.test(message) || (position !== null && Number(position[1]) >= text.trimEnd().length)
    throw new CheckpointError(
      truncated ? 'CHECKPOINT_TRUNCATED' : 'CHECKPOINT_INVALID_JSON',
      runId,
      truncated
        ? `the stored checkpoint is truncated (${text.length} characters, ${message}).`
        : `the stored checkpoint is not valid JSON: ${message}`,
      { cause, details: { size: text.length } },
    )
  }
  if (!json || typeof json !== 'object' || Array.isArray(json)) {
    throw new CheckpointError('CHECKPOINT_INVALID', runId, 'the stored checkpoint is not a JSON object.')
  }
  const { v } = json as { v?: unknown }
  if (v !== CHECKPOINT_VERSION) {
    const shown = JSON.stringify(v) ?? 'undefined'
    const why =
      typeof v === 'number' && v > CHECKPOINT_VERSION
        ? ' (written by a newer signalbox: upgrade this process)'
        : typeof v === 'number' && v >= 1 && v < CHECKPOINT_VERSION
          ? ' (written by an older signalbox: finish or delete the run with the version that stored it)'
          : ''
    throw new CheckpointError(
      'CHECKPOINT_UNSUPPORTED_VERSION',
      runId,
      `checkpoint schema version ${shown.slice(0, 40)} is not supported; this signalbox reads version ${CHECKPOINT_VERSION}${why}.`,
      { details: { version: typeof v === 'number' || typeof v === 'string' ? v : null, supported: CHECKPOINT_VERSION } },
    )
  }
  const parsed = Checkpoint.safeParse(json)
  if (!parsed.success) {
    const issues = formatIssues(parsed.error).slice(0, 10)
    throw new CheckpointError(
      'CHECKPOINT_INVALID',
      runId,
      `the stored checkpoint does not match schema v${CHECKPOINT_VERSION}: ${issues.join('; ')}`,
      {
        details: { issues },
      },
    )
  }
  if (parsed.data.runId !== runId) {
    throw new CheckpointError('CHECKPOINT_INVALID', runId, `the stored checkpoint belongs to run "${parsed.data.runId}".`)
  }
  return parsed.data
}

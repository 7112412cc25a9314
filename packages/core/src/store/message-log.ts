import { z } from 'zod/v4'
import type { Message } from '../messages.ts'
import { discriminatedUnion } from '../portable-zod.ts'
import { CheckpointError, RunStoreError } from './errors.ts'

/**
 * The transcript of a stored run is an append-only log of batches: `{ from, epoch, messages }`
 * puts `messages` at indices `from…`. A checkpoint says how many messages count
 * (`transcript.length`), so a batch written after the last checkpoint (the process died before
 * saving) is simply overwritten by the resumed run, which appends again from that length.
 *
 * Reading applies batches by epoch, then in write order: a former owner whose lease was taken
 * writes with an older epoch and can never overwrite what the new owner wrote.
 */
const StoredMessage = discriminatedUnion('role', [
  z.object({ role: z.literal('system'), content: z.string() }),
  z.object({ role: z.literal('user'), content: z.string() }),
  z.object({
    role: z.literal('assistant'),
    content: z.string().nullable(),
    tool_calls: z
      .array(
        z.object({
          id: z.string(),
          type: z.literal('function'),
          function: z.object({ name: z.string(), arguments: z.string() }),
        }),
      )
      .optional(),
  }),
  z.object({ role: z.literal('tool'), tool_call_id: z.string(), content: z.string() }),
])

export const MessageBatch = z.object({
  from: z.number().int().nonnegative(),
  epoch: z.number().int().nonnegative(),
  messages: z.array(StoredMessage),
})
export interface MessageBatch {
  from: number
  epoch: number
  messages: Message[]
}

/** A batch to append (see `AppendMessagesOptions`), as `RunStore.saveWithMessages` takes it. */
export type MessagesToAppend = Pick<AppendMessagesOptions, 'from' | 'epoch' | 'messages'>

export interface AppendMessagesOptions {
  /** Index of the first message (the transcript length before these messages). */
  from: number
  /** The writer's lease epoch (0 without a lease). */
  epoch: number
  messages: Message[]
  /** See `SaveOptions.sync`. Default true. */
  sync?: boolean
  signal: AbortSignal
}

/** Rebuilds the first `length` messages; a hole below `length` is a clear error naming the run. */
export function assembleTranscript(runId: string, batches: Iterable<MessageBatch>, length: number): Message[] {
  const ordered = [...batches].map((batch, order) => ({ batch, order }))
  ordered.sort((a, b) => a.batch.epoch - b.batch.epoch || a.order - b.order)
  const slots: (Message | undefined)[] = Array.from({ length }, () => undefined)
  for (const { batch } of ordered) {
    for (let i = 0; i < batch.messages.length && batch.from + i < length; i++) slots[batch.from + i] = batch.messages[i]
  }
  const missing = slots.indexOf(undefined)
  if (missing >= 0) {
    throw new RunStoreError(
      'RUN_TRANSCRIPT_GAP',
      runId,
      `the message log has no message ${missing} of the ${length} the checkpoint counts.`,
      {
        missing,
        length,
      },
    )
  }
  return slots as Message[]
}

/** Parses one stored batch; `undefined` for a torn write (the process died mid-append). */
export function parseBatch(runId: string, text: string): MessageBatch | undefined {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    return undefined
  }
  const parsed = MessageBatch.safeParse(json)
  if (!parsed.success) {
    throw new CheckpointError('CHECKPOINT_INVALID', runId, 'a message-log entry does not match the batch schema.', {
      details: { sample: text.slice(0, 200) },
    })
  }
  return parsed.data satisfies MessageBatch
}

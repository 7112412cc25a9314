import { ConfigError, tool } from '@signalbox/core'
import { describe, expect, it } from 'vitest'
import type { z } from 'zod'
import { z as zod3 } from 'zod3'
import { z as zod3v4 } from 'zod3/v4'

// `zod3` is the real zod 3.25 package (a workspace alias): what a user on zod 3 passes to tool().
describe('tool() and the zod a user has', () => {
  it('rejects a zod 3 schema, saying which zod is needed and how to import it', () => {
    const define = () =>
      tool({
        name: 'book',
        description: 'Book a seat.',
        schema: zod3.object({ train: zod3.number() }) as never,
        execute: () => 'booked',
      })
    expect(define).toThrow(ConfigError)
    expect(define).toThrow(/zod 3.*needs a zod 4 schema.*npm i zod@\^4.*import \{ z \} from 'zod\/v4'/)
  })

  it('rejects what is not a schema at all', () => {
    expect(() => tool({ name: 'book', description: 'Book.', schema: {} as never, execute: () => 'ok' })).toThrow(
      /`schema` must be a zod 4 schema/,
    )
  })

  it("accepts zod 3.25's zod/v4 schemas: JSON Schema for the model, validation of the model's arguments", () => {
    const book = tool({
      name: 'book',
      description: 'Book a seat.',
      // Installed, core's `zod/v4` is the user's own; here two zod copies meet, so only the types need a cast.
      schema: zod3v4.object({
        train: zod3v4.number().int(),
        seat_class: zod3v4.enum(['first', 'tourist']),
      }) as unknown as z.ZodType<{
        train: number
        seat_class: 'first' | 'tourist'
      }>,
      execute: ({ train }) => `booked on ${train}`,
    })
    expect(book.parameters).toMatchObject({
      type: 'object',
      properties: { train: { type: 'integer' }, seat_class: { enum: ['first', 'tourist'] } },
      required: ['train', 'seat_class'],
    })
    expect(book.validate({ train: 3, seat_class: 'tourist' })).toEqual({ ok: true, value: { train: 3, seat_class: 'tourist' } })
    expect(book.validate({ train: 'three', seat_class: 'tourist' }).ok).toBe(false)
  })
})

import { ConfigError, createAgent, tool } from '@signalbox/core'
import { ScriptedProvider } from '@signalbox/core/testing'
import { afterEach, beforeEach, describe, expect, expectTypeOf, it, vi } from 'vitest'
import * as zm from 'zod/mini'
import { z as zod3 } from 'zod3'
import { z as zod3v4 } from 'zod3/v4'

// `zod3` is the real zod 3.25 package (a workspace alias): `zod3` is what `import { z } from 'zod'`
// gives a zod 3 user, `zod3/v4` what `import { z } from 'zod/v4'` gives them. signalbox's own zod
// here is zod 4, so these schemas come from another copy, as they would from a user's.

let warnings: ReturnType<typeof vi.spyOn>
beforeEach(() => {
  warnings = vi.spyOn(console, 'warn')
})
afterEach(() => {
  // zod 3.25's converter warns on a target name it does not know ("Invalid target: draft-07").
  expect(warnings).not.toHaveBeenCalled()
  warnings.mockRestore()
})

const BOOKING_JSON = {
  type: 'object',
  properties: { train: { type: 'integer' }, seat_class: { type: 'string', enum: ['first', 'tourist'] } },
  required: ['train', 'seat_class'],
}

describe('tool() with the zod a user has', () => {
  it("zod 3.25's zod/v4: JSON Schema for the model, validation of the model's arguments, typed arguments", () => {
    const book = tool({
      name: 'book',
      description: 'Book a seat.',
      schema: zod3v4.object({ train: zod3v4.number().int(), seat_class: zod3v4.enum(['first', 'tourist']) }),
      execute: (args) => {
        expectTypeOf(args).toEqualTypeOf<{ train: number; seat_class: 'first' | 'tourist' }>()
        return `booked on ${args.train}`
      },
    })
    expect(book.parameters).toMatchObject(BOOKING_JSON)
    expect(book.parameters.$schema).toBeUndefined()
    expect(book.validate({ train: 3, seat_class: 'tourist' })).toEqual({ ok: true, value: { train: 3, seat_class: 'tourist' } })
    expect(book.validate({ train: 'three', seat_class: 'tourist' })).toMatchObject({ ok: false, issues: [/^train: /] })
  })

  it('zod 3 (`zod` on 3.x): the same JSON Schema, validated by zod 3 itself, typed arguments', () => {
    const book = tool({
      name: 'book',
      description: 'Book a seat.',
      schema: zod3.object({ train: zod3.number().int(), seat_class: zod3.enum(['first', 'tourist']) }),
      execute: (args) => {
        expectTypeOf(args).toEqualTypeOf<{ train: number; seat_class: 'first' | 'tourist' }>()
        return `booked on ${args.train}`
      },
    })
    expect(book.parameters).toEqual(BOOKING_JSON)
    expect(book.validate({ train: 3, seat_class: 'first' })).toEqual({ ok: true, value: { train: 3, seat_class: 'first' } })
    expect(book.validate({ train: 3.5, seat_class: 'second' })).toMatchObject({
      ok: false,
      issues: [/^train: /, /^seat_class: /],
    })
  })

  it('zod 4 mini: read through zod/v4/core, which has no methods on the schema', () => {
    const book = tool({
      name: 'book',
      description: 'Book a seat.',
      schema: zm.object({ train: zm.number(), seat_class: zm.optional(zm.enum(['first', 'tourist'])) }),
      execute: (args) => {
        expectTypeOf(args).toEqualTypeOf<{ train: number; seat_class?: 'first' | 'tourist' | undefined }>()
        return 'booked'
      },
    })
    expect(book.parameters).toMatchObject({ type: 'object', required: ['train'] })
    expect(book.validate({ train: 3 })).toEqual({ ok: true, value: { train: 3 } })
    expect(book.validate({}).ok).toBe(false)
  })

  it('rejects what is not a zod schema, saying what it got', () => {
    expect(() => tool({ name: 'book', description: 'Book.', schema: {} as never, execute: () => 'ok' })).toThrow(
      /Tool "book": `schema` must be a zod schema, e.g\. z\.object\(\{ \.\.\. \}\); got a plain object\./,
    )
  })

  it('a schema that is not an object, in either zod, is refused', () => {
    for (const schema of [zod3.string(), zod3v4.string()]) {
      expect(() => tool({ name: 'x', description: 'x', schema, execute: () => 'ok' })).toThrow(/must be a z\.object/)
    }
  })
})

describe('zod 3 schemas as JSON Schema', () => {
  const Z = zod3
  const json = (schema: Parameters<typeof tool>[0]['schema']) =>
    tool({ name: 't', description: 't', schema, execute: () => '' }).parameters

  it('strings, numbers, literals, enums, arrays, tuples, records, unions, nullables, defaults and descriptions', () => {
    enum Color {
      Red = 0,
      Blue = 1,
    }
    const schema = Z.object({
      email: Z.string().email().describe('Where to write.'),
      code: Z.string()
        .min(2)
        .max(8)
        .regex(/^[A-Z]+$/),
      prefix: Z.string().startsWith('a.b'),
      count: Z.number().int().positive().lte(10).multipleOf(2),
      ratio: Z.number().gte(0).lt(1),
      flag: Z.boolean(),
      kind: Z.literal('trip'),
      none: Z.null(),
      color: Z.nativeEnum(Color),
      tags: Z.array(Z.string()).min(1).max(3),
      pair: Z.tuple([Z.string(), Z.number()]),
      extra: Z.record(Z.string(), Z.number()),
      either: Z.union([Z.string(), Z.number()]),
      shape: Z.discriminatedUnion('type', [Z.object({ type: Z.literal('a') }), Z.object({ type: Z.literal('b') })]),
      maybe: Z.string().nullable(),
      later: Z.string().optional(),
      size: Z.number().default(1),
      anything: Z.unknown(),
    })
    expect(json(schema)).toEqual({
      type: 'object',
      properties: {
        email: { type: 'string', format: 'email', description: 'Where to write.' },
        code: { type: 'string', minLength: 2, maxLength: 8, pattern: '^[A-Z]+$' },
        prefix: { type: 'string', pattern: '^a\\.b' },
        count: { type: 'integer', exclusiveMinimum: 0, maximum: 10, multipleOf: 2 },
        ratio: { type: 'number', minimum: 0, exclusiveMaximum: 1 },
        flag: { type: 'boolean' },
        kind: { type: 'string', const: 'trip' },
        none: { type: 'null' },
        color: { type: 'number', enum: [0, 1] },
        tags: { type: 'array', items: { type: 'string' }, minItems: 1, maxItems: 3 },
        pair: { type: 'array', items: [{ type: 'string' }, { type: 'number' }], minItems: 2, maxItems: 2 },
        extra: { type: 'object', additionalProperties: { type: 'number' } },
        either: { anyOf: [{ type: 'string' }, { type: 'number' }] },
        shape: {
          anyOf: [
            { type: 'object', properties: { type: { type: 'string', const: 'a' } }, required: ['type'] },
            { type: 'object', properties: { type: { type: 'string', const: 'b' } }, required: ['type'] },
          ],
        },
        maybe: { anyOf: [{ type: 'string' }, { type: 'null' }] },
        later: { type: 'string' },
        size: { type: 'number', default: 1 },
        anything: {},
      },
      // The input side: what may be left out (optional, defaulted, unknown) is not required.
      required: [
        'email',
        'code',
        'prefix',
        'count',
        'ratio',
        'flag',
        'kind',
        'none',
        'color',
        'tags',
        'pair',
        'extra',
        'either',
        'shape',
        'maybe',
      ],
    })
  })

  it('closes strict objects, and strip objects on the output side (as zod 4 does)', () => {
    expect(json(Z.object({ a: Z.string() }).strict())).toMatchObject({ additionalProperties: false })
    expect(json(Z.object({ a: Z.string() }).catchall(Z.number()))).toMatchObject({ additionalProperties: { type: 'number' } })
    expect(json(Z.object({ a: Z.string() }))).not.toHaveProperty('additionalProperties')
  })

  it('refinements keep their schema; what JSON Schema cannot say is a ConfigError naming the tool', () => {
    expect(json(Z.object({ a: Z.string().refine((s) => s.length > 1) }))).toMatchObject({ properties: { a: { type: 'string' } } })
    const refused = (schema: Parameters<typeof json>[0]) => () => json(schema)
    expect(refused(Z.object({ when: Z.date() }))).toThrow(ConfigError)
    expect(refused(Z.object({ when: Z.date() }))).toThrow(/Tool "t": its schema cannot be expressed as JSON Schema \(ZodDate/)
    interface Node {
      children: Node[]
    }
    const Node: zod3.ZodType<Node> = Z.lazy(() => Z.object({ children: Z.array(Node) }))
    expect(refused(Z.object({ root: Node }))).toThrow(/recursive zod 3 schemas.*zod\/v4/)
  })
})

describe('createAgent({ output }) with the zod a user has', () => {
  const answer = { content: '{"destination":"Mar del Plata","seats":2}' }

  it("zod 3.25's zod/v4: strict response_format, parsed and typed answer", async () => {
    const provider = new ScriptedProvider({ script: [answer] })
    const agent = createAgent({ provider, output: zod3v4.object({ destination: zod3v4.string(), seats: zod3v4.number() }) })
    const result = await agent.run('Two seats to Mar del Plata.')
    expectTypeOf(result.output).toEqualTypeOf<{ destination: string; seats: number }>()
    expect(result.output).toEqual({ destination: 'Mar del Plata', seats: 2 })
    expect(provider.requests[0]?.body).toMatchObject({ responseFormat: { strict: true } })
  })

  it('zod 3: strict response_format (closed object, every key required), parsed and typed answer', async () => {
    const provider = new ScriptedProvider({ script: [{ content: '{"seats":"two"}' }, answer] })
    const agent = createAgent({ provider, output: zod3.object({ destination: zod3.string(), seats: zod3.number() }) })
    const result = await agent.run('Two seats to Mar del Plata.')
    expectTypeOf(result.output).toEqualTypeOf<{ destination: string; seats: number }>()
    expect(result.output).toEqual({ destination: 'Mar del Plata', seats: 2 })
    expect(provider.requests[0]?.body).toMatchObject({
      responseFormat: {
        strict: true,
        schema: {
          type: 'object',
          properties: { destination: { type: 'string' }, seats: { type: 'number' } },
          required: ['destination', 'seats'],
          additionalProperties: false,
        },
      },
    })
    // The first answer failed zod 3's own check: the model read its issues.
    expect(JSON.stringify(provider.requests[1]?.messages.at(-1))).toMatch(/destination: .*seats: /)
  })

  it('a transform has no JSON Schema for its output: refused when the agent is made', () => {
    const provider = new ScriptedProvider({ script: [] })
    expect(() => createAgent({ provider, output: zod3.object({ n: zod3.string().transform(Number) }) })).toThrow(
      /The output schema cannot be expressed as JSON Schema \(a transform/,
    )
  })
})

/**
 * Every decoder against random and mutated input (fast-check): the wire codec with every
 * message schema, and the checkpoint codec. A decoder never throws, never returns a message that
 * breaks its schema, and says why in bounded words (a hostile payload cannot make the error huge).
 */

import { sampleCheckpoint } from '@signalbox/core/testing'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { callDigest, canonicalJson } from '../../src/hitl/digest.ts'
import { decodeMessage, MAX_DEPTH } from '../../src/protocol/codec.ts'
import { PROTOCOL_MESSAGES, type ProtocolMessageType } from '../../src/protocol/schemas.ts'
import { decodeCheckpoint, encodeCheckpoint } from '../../src/store/codec.ts'
import { CheckpointError } from '../../src/store/errors.ts'
import { fixtureJson, PROTOCOL_ERROR_CODES, schemaOf, validFixtures } from '../protocol/helpers.ts'

const TYPES = Object.keys(PROTOCOL_MESSAGES) as ProtocolMessageType[]
const VALID = validFixtures().map((fixture) => ({ type: fixture.type, json: fixtureJson(fixture) }))
const encoder = new TextEncoder()

/** Decodes against `type`'s schema and checks the result's shape; returns it for further checks. */
function decodeChecked(data: Uint8Array | string, type: ProtocolMessageType, maxBytes?: number) {
  const result = decodeMessage(data, schemaOf(type), maxBytes === undefined ? {} : { maxBytes })
  if (result.ok) {
    const value = result.value as { v: unknown; type: unknown }
    expect(value.v).toBe(1)
    expect(schemaOf(type).safeParse(value).success).toBe(true)
  } else {
    expect(PROTOCOL_ERROR_CODES).toContain(result.error.code)
    expect(result.error.message.length).toBeLessThanOrEqual(2_100)
    expect(JSON.stringify(result.error.details ?? {}).length).toBeLessThan(12_000)
  }
  return result
}

/** A JSON document as text with one of its keys written twice (the second value differs). */
function withRepeatedKey(json: Record<string, unknown>, key: string, second: unknown): string {
  const text = JSON.stringify(json)
  return `${text.slice(0, -1)},${JSON.stringify(key)}:${JSON.stringify(second)}}`
}

/** One random change to a valid message: a member replaced, removed, added, or the envelope broken. */
const mutation = fc.oneof(
  fc.record({ kind: fc.constant('replace' as const), pick: fc.nat(), value: fc.jsonValue({ maxDepth: 3 }) }),
  fc.record({ kind: fc.constant('remove' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('add' as const), key: fc.string({ maxLength: 12 }), value: fc.jsonValue({ maxDepth: 2 }) }),
  fc.record({
    kind: fc.constant('version' as const),
    value: fc.oneof(fc.integer(), fc.string(), fc.constant(null), fc.double()),
  }),
  fc.record({ kind: fc.constant('type' as const), value: fc.oneof(fc.constantFrom(...TYPES), fc.string({ maxLength: 30 })) }),
  fc.record({ kind: fc.constant('truncate' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('flip' as const), at: fc.nat(), byte: fc.integer({ min: 0, max: 255 }) }),
)

type Mutation = typeof mutation extends fc.Arbitrary<infer T> ? T : never

function mutate(json: Record<string, unknown>, m: Mutation): Uint8Array {
  const copy: Record<string, unknown> = structuredClone(json)
  const keys = Object.keys(copy)
  switch (m.kind) {
    case 'replace':
      copy[keys[m.pick % keys.length] as string] = m.value
      break
    case 'remove':
      delete copy[keys[m.pick % keys.length] as string]
      break
    case 'add':
      copy[m.key] = m.value
      break
    case 'version':
      copy.v = m.value
      break
    case 'type':
      copy.type = m.value
      break
  }
  const bytes = encoder.encode(JSON.stringify(copy))
  if (m.kind === 'truncate') return bytes.subarray(0, m.at % (bytes.length + 1))
  if (m.kind === 'flip') {
    const flipped = bytes.slice()
    if (flipped.length > 0) flipped[m.at % flipped.length] = m.byte
    return flipped
  }
  return bytes
}

describe('wire decoder (decodeMessage) under fuzzing', () => {
  it('random bytes, for every message schema: never throws', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), fc.constantFrom(...TYPES), (bytes, type) => {
        decodeChecked(bytes, type)
      }),
      { numRuns: 400 },
    )
  })

  it('random JSON values and random strings: never throws, and only objects with v 1 can pass', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)),
          fc.string({ maxLength: 200 }),
        ),
        fc.constantFrom(...TYPES),
        (text, type) => {
          const result = decodeChecked(text, type)
          // Random JSON essentially never forms a valid message; if it does, it must be a v1 object.
          if (result.ok) expect(JSON.parse(text).v).toBe(1)
        },
      ),
      { numRuns: 400 },
    )
  })

  it('mutated valid messages (every fixture): never throws; a broken envelope is named as such', () => {
    fc.assert(
      fc.property(fc.constantFrom(...VALID), mutation, ({ type, json }, m) => {
        const result = decodeChecked(mutate(json, m), type)
        if (m.kind === 'version' && m.value !== 1) expect(!result.ok && result.error.code).toBe('PROTOCOL_UNSUPPORTED_VERSION')
        if (m.kind === 'flip' && !result.ok) expect(PROTOCOL_ERROR_CODES).toContain(result.error.code)
      }),
      { numRuns: 400 },
    )
  })

  it('payloads around the size limit: refused as too large past it, before parsing', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1_000, max: 4_000 }), fc.integer({ min: -50, max: 50 }), (limit, delta) => {
        const { json } = VALID.find((v) => v.type === 'steer') as (typeof VALID)[number]
        const base = JSON.stringify({ ...json, pad: '' })
        const padded = JSON.stringify({ ...json, pad: 'x'.repeat(Math.max(0, limit + delta - base.length)) })
        const result = decodeChecked(padded, 'steer', limit)
        const size = Buffer.byteLength(padded)
        if (size > limit) expect(!result.ok && result.error.code).toBe('PROTOCOL_TOO_LARGE')
        else expect(result.ok).toBe(true)
      }),
      { numRuns: 100 },
    )
  })

  it('deep nesting: refused past the depth limit, whatever the depth (no stack overflow)', () => {
    const { json } = VALID.find((v) => v.type === 'approval.request') as (typeof VALID)[number]
    const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`
    const message = (depth: number) =>
      JSON.stringify({ ...json, arguments: null }).replace('"arguments":null', `"arguments":${nested(depth)}`)
    fc.assert(
      fc.property(fc.oneof(fc.integer({ min: 1, max: MAX_DEPTH + 5 }), fc.constantFrom(1_000, 100_000)), (depth) => {
        const result = decodeChecked(message(depth), 'approval.request')
        // The message is level 1 and `arguments` level 2.
        if (depth + 1 > MAX_DEPTH) expect(!result.ok && result.error.code).toBe('PROTOCOL_INVALID_MESSAGE')
        else expect(result.ok ? '' : result.error.message).not.toMatch(/nested deeper/)
      }),
      { numRuns: 40 },
    )
    // What passes can be digested (the digest recurses): no stack overflow downstream.
    const passed = decodeMessage(message(MAX_DEPTH - 1), schemaOf('approval.request'))
    expect(passed.ok).toBe(true)
    if (passed.ok) expect(callDigest('x', (passed.value as { arguments: unknown }).arguments)).toMatch(/^sha256:/)
  })

  it('non-UTF-8 bytes anywhere in a valid message: refused as invalid JSON, never decoded', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...VALID),
        fc.nat(),
        fc.constantFrom([0xff], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xf8, 0x88, 0x80, 0x80, 0x80], [0xe2, 0x82]),
        ({ type, json }, at, bad) => {
          const bytes = encoder.encode(JSON.stringify(json))
          const i = at % bytes.length
          const data = new Uint8Array([...bytes.subarray(0, i), ...bad, ...bytes.subarray(i)])
          const result = decodeChecked(data, type)
          expect(!result.ok && result.error.code).toBe('PROTOCOL_INVALID_JSON')
        },
      ),
      { numRuns: 200 },
    )
  })

  it('repeated keys: the last occurrence wins, as docs/protocol.md §1.1 says', () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1, maxLength: 50 }).filter((t) => /\S/.test(t)),
        (text) => {
          const { json } = VALID.find((v) => v.type === 'steer') as (typeof VALID)[number]
          const result = decodeChecked(withRepeatedKey(json, 'text', text), 'steer')
          expect(result.ok && (result.value as { text: string }).text).toBe(text)
        },
      ),
      { numRuns: 50 },
    )
    const { json } = VALID.find((v) => v.type === 'approval.decision') as (typeof VALID)[number]
    // A repeated version: the last one decides, so `"v":1,…,"v":2` is refused as v2.
    const v2 = decodeMessage(withRepeatedKey(json, 'v', 2), schemaOf('approval.decision'))
    expect(!v2.ok && v2.error.code).toBe('PROTOCOL_UNSUPPORTED_VERSION')
    // The digest a decision quotes is compared as decoded: a repeated `digest` cannot smuggle a second one.
    const digest = decodeMessage(withRepeatedKey(json, 'digest', `sha256:${'0'.repeat(64)}`), schemaOf('approval.decision'))
    expect(digest.ok && (digest.value as { digest: string }).digest).toBe(`sha256:${'0'.repeat(64)}`)
  })
})

describe('checkpoint decoder (decodeCheckpoint) under fuzzing', () => {
  const stored = encodeCheckpoint(sampleCheckpoint())

  /** Either a valid checkpoint of this run, or a CheckpointError naming it: nothing else. */
  function decodeStored(data: string | Uint8Array) {
    try {
      const checkpoint = decodeCheckpoint('run_1', data)
      expect(checkpoint.runId).toBe('run_1')
      expect(() => encodeCheckpoint(checkpoint)).not.toThrow()
    } catch (error) {
      expect(error).toBeInstanceOf(CheckpointError)
      expect((error as CheckpointError).message).toContain('run_1')
    }
  }

  it('random bytes and random JSON: a CheckpointError, never anything else', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.uint8Array({ maxLength: 300 }),
          fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)),
          fc.string({ maxLength: 100 }),
        ),
        decodeStored,
      ),
      { numRuns: 400 },
    )
  })

  it('mutated stored checkpoints: truncated, bytes flipped, members replaced or removed', () => {
    fc.assert(
      fc.property(mutation, (m) => decodeStored(mutate(JSON.parse(stored), m))),
      { numRuns: 400 },
    )
  })

  it('a deeply nested checkpoint is refused or read, never a crash', () => {
    for (const depth of [100, 10_000, 100_000]) {
      const deep = stored.replace('"steering":[', `"deep":${'['.repeat(depth)}${']'.repeat(depth)},"steering":[`)
      decodeStored(deep)
    }
    expect(canonicalJson(JSON.parse(stored))).toBeTypeOf('string')
  })
})

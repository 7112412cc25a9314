/**
 * `encodeMessage` / `decodeMessage` as the protocol document describes them (§1.2, §1.3, §1.6):
 * round trips, forward compatibility, the size limit, UTF-8, and "never throws".
 */
import { describe, expect, it } from 'vitest'
import { decodeMessage, encodeMessage, errorMessage, payloadSample } from '../../src/protocol/codec.ts'
import { ErrorMessage, PROTOCOL_MESSAGES, PROTOCOL_VERSION, ToolResultMessage } from '../../src/protocol/schemas.ts'
import { fixtureJson, PROTOCOL_ERROR_CODES, schemaOf, validFixtures } from './helpers.ts'

const valid = validFixtures()
const MiB = 1024 * 1024

function decodeOk(data: Uint8Array | string, type: keyof typeof PROTOCOL_MESSAGES, maxBytes?: number) {
  const result = decodeMessage(data, schemaOf(type), maxBytes === undefined ? {} : { maxBytes })
  if (!result.ok) throw new Error(`${result.error.code}: ${result.error.message}`)
  return result.value as Record<string, unknown>
}

function codeOf(data: Uint8Array | string, type: keyof typeof PROTOCOL_MESSAGES, maxBytes?: number): string {
  const result = decodeMessage(data, schemaOf(type), maxBytes === undefined ? {} : { maxBytes })
  return result.ok ? 'ok' : result.error.code
}

describe('round trip', () => {
  it.each(valid.map((f) => [f.file, f] as const))('%s: decode → encode → decode is stable', (_file, fixture) => {
    const first = decodeOk(fixture.bytes, fixture.type)
    const bytes = encodeMessage(first as { v: number; type: string })
    const second = decodeOk(bytes, fixture.type)
    expect(second).toEqual(first)
    // The encoding is compact UTF-8 JSON: one line, no whitespace outside strings.
    expect(new TextDecoder().decode(bytes)).toBe(JSON.stringify(first))
  })

  it('encodes non-ASCII text as UTF-8 (byte counts are bytes)', () => {
    const message = { v: PROTOCOL_VERSION, type: 'tool.result', callId: 'call_1', output: 'ñandú 🦩' }
    const bytes = encodeMessage(message)
    expect(bytes.byteLength).toBe(Buffer.byteLength(JSON.stringify(message)))
    expect(bytes.byteLength).toBeGreaterThan(JSON.stringify(message).length)
    expect(decodeOk(bytes, 'tool.result').output).toBe('ñandú 🦩')
  })

  it('decodes the same from bytes and from a string', () => {
    for (const fixture of valid) {
      expect(decodeOk(new TextDecoder().decode(fixture.bytes), fixture.type), fixture.file).toEqual(
        decodeOk(fixture.bytes, fixture.type),
      )
    }
  })

  it('errorMessage() builds a valid `error` reply, with and without inReplyTo', () => {
    const withId = errorMessage({ code: 'TOOL_FAILED', message: 'boom', details: { attempt: 2 } }, 'call_1')
    expect(ErrorMessage.parse(withId)).toEqual(withId)
    expect(withId).toEqual({
      v: 1,
      type: 'error',
      error: { code: 'TOOL_FAILED', message: 'boom', details: { attempt: 2 } },
      inReplyTo: 'call_1',
    })
    const withoutId = errorMessage({ code: 'PROTOCOL_INVALID_JSON', message: 'bad' })
    expect(withoutId).toEqual({ v: 1, type: 'error', error: { code: 'PROTOCOL_INVALID_JSON', message: 'bad' } })
    expect(decodeOk(encodeMessage(withoutId), 'error')).toEqual(withoutId)
  })

  it('a ProtocolError serializes into an `error` reply that decodes', () => {
    const failed = decodeMessage('{"v":2,"type":"tool.call"}', schemaOf('tool.call'))
    expect(failed.ok).toBe(false)
    if (failed.ok) return
    const reply = errorMessage(failed.error.toJSON())
    expect(decodeOk(encodeMessage(reply), 'error')).toMatchObject({
      type: 'error',
      error: { code: 'PROTOCOL_UNSUPPORTED_VERSION', details: { version: 2 } },
    })
  })
})

describe('forward compatibility (§1.3)', () => {
  it.each(valid.map((f) => [f.file, f] as const))('%s: unknown top-level fields are accepted and ignored', (_file, fixture) => {
    const json = fixtureJson(fixture)
    const extended = { ...json, 'x-added-in-v1.7': { nested: [1, 2, 3] }, priority: 'high' }
    const decoded = decodeOk(JSON.stringify(extended), fixture.type)
    expect(decoded.type).toBe(fixture.type)
    expect(decoded).not.toHaveProperty('priority')
  })

  it('unknown nested fields are accepted too', () => {
    const cases: [keyof typeof PROTOCOL_MESSAGES, (json: Record<string, unknown>) => void][] = [
      ['audit', (j) => Object.assign(j.entry as object, { requestId: 'request_1', ticket: 'OPS-12' })],
      ['control.reply', (j) => Object.assign((j.runs as object[])[0] as object, { model: 'gpt-x' })],
      ['error', (j) => Object.assign(j.error as object, { retryable: true })],
      ['rejection', (j) => Object.assign(j.error as object, { hint: 'check the digest' })],
      ['event', (j) => Object.assign(j.event as object, { spanId: 'abc' })],
      ['run.result', (j) => Object.assign(j.usage as object, { cachedTokens: 12 })],
    ]
    for (const [type, mutate] of cases) {
      const fixture = valid.find((f) => f.type === type && f.description === undefined)
      if (!fixture) throw new Error(`no valid/${type}.json`)
      const json = fixtureJson(fixture)
      mutate(json)
      expect(codeOf(JSON.stringify(json), type), type).toBe('ok')
    }
  })

  it('an event keeps fields of event types this version does not know', () => {
    const message = { v: 1, type: 'event', event: { type: 'budget.exceeded', agentId: 'claw', runId: 'run_1', at: 5, spent: 12 } }
    expect(decodeOk(JSON.stringify(message), 'event').event).toEqual(message.event)
  })

  it('`v` is the number 1 (1.0 is the same JSON number); anything else is an unsupported version', () => {
    expect(codeOf('{"v":1.0,"type":"control.status"}', 'control.status')).toBe('ok')
    for (const v of ['2', '0', '-1', '1.5', '"1"', 'null', 'true', '[1]', '{"major":1}']) {
      expect(codeOf(`{"v":${v},"type":"control.status"}`, 'control.status'), `v=${v}`).toBe('PROTOCOL_UNSUPPORTED_VERSION')
    }
    expect(codeOf('{"type":"control.status"}', 'control.status')).toBe('PROTOCOL_UNSUPPORTED_VERSION')
  })

  it('checks the version before the type and the type before the fields', () => {
    // v2 with a type this subject does not carry: the version is what is reported.
    expect(codeOf('{"v":2,"type":"nonsense"}', 'approval.decision')).toBe('PROTOCOL_UNSUPPORTED_VERSION')
    // Wrong type and missing fields: the type is reported.
    expect(codeOf('{"v":1,"type":"approval.request"}', 'approval.decision')).toBe('PROTOCOL_UNEXPECTED_TYPE')
  })

  it('a v2 message is reported with the version it carried', () => {
    const result = decodeMessage('{"v":2,"type":"approval.decision"}', schemaOf('approval.decision'))
    expect(!result.ok && result.error.details).toEqual({ version: 2 })
  })

  it('the control subject takes exactly control.status and control.cancel', () => {
    expect(codeOf('{"v":1,"type":"control.status"}', 'control.cancel')).toBe('ok')
    expect(codeOf('{"v":1,"type":"control.cancel"}', 'control.status')).toBe('ok')
    expect(codeOf('{"v":1,"type":"control.reply","agentId":"claw","runs":[]}', 'control.status')).toBe('PROTOCOL_UNEXPECTED_TYPE')
  })
})

describe('size limit (§1.6)', () => {
  const fixture = valid.find((f) => f.type === 'approval.request' && f.description === undefined)
  if (!fixture) throw new Error('no valid/approval.request.json')
  const compact = encodeMessage(fixtureJson(fixture) as { v: number; type: string })

  it('accepts a message of exactly maxBytes and rejects one byte more', () => {
    expect(codeOf(compact, 'approval.request', compact.byteLength)).toBe('ok')
    const result = decodeMessage(compact, schemaOf('approval.request'), { maxBytes: compact.byteLength - 1 })
    expect(result.ok).toBe(false)
    if (result.ok) return
    expect(result.error.code).toBe('PROTOCOL_TOO_LARGE')
    expect(result.error.details).toEqual({ size: compact.byteLength })
  })

  it('checks the size before parsing (an oversized garbage payload is TOO_LARGE, not INVALID_JSON)', () => {
    expect(codeOf(new Uint8Array(2048).fill(0xff), 'tool.result', 1024)).toBe('PROTOCOL_TOO_LARGE')
  })

  it('counts bytes, not characters, for string input', () => {
    const output = 'ñ'.repeat(600) // 600 characters, 1200 bytes
    const text = JSON.stringify({ v: 1, type: 'tool.result', callId: 'call_1', output })
    expect(text.length).toBeLessThan(1000)
    expect(codeOf(text, 'tool.result', 1000)).toBe('PROTOCOL_TOO_LARGE')
    expect(codeOf(text, 'tool.result', Buffer.byteLength(text))).toBe('ok')
  })

  it('a tool result over the NATS default of 1 MiB is PROTOCOL_TOO_LARGE at maxBytes = 1 MiB', () => {
    const message = { v: 1, type: 'tool.result', callId: 'call_1', output: 'x'.repeat(MiB) }
    const bytes = encodeMessage(message)
    expect(bytes.byteLength).toBeGreaterThan(MiB)
    expect(codeOf(bytes, 'tool.result', MiB)).toBe('PROTOCOL_TOO_LARGE')
    expect(codeOf(bytes, 'tool.result')).toBe('ok') // no limit given: the schema itself has none on output
    expect(ToolResultMessage.safeParse(message).success).toBe(true)
  })

  it('without maxBytes there is no size check', () => {
    expect(codeOf(compact, 'approval.request')).toBe('ok')
  })
})

describe('UTF-8 and JSON (§1.1)', () => {
  const prefix = new TextEncoder().encode('{"v":1,"type":"tool.result","callId":"call_1","output":"')
  const suffix = new TextEncoder().encode('"}')
  const withBytes = (...bytes: number[]) => new Uint8Array([...prefix, ...bytes, ...suffix])

  it('accepts well-formed multi-byte UTF-8', () => {
    expect(decodeOk(withBytes(0xc3, 0xb1, 0xf0, 0x9f, 0xa6, 0xa9), 'tool.result').output).toBe('ñ🦩')
  })

  it.each([
    ['a lone Latin-1 byte (é)', [0xe9]],
    ['a lone continuation byte', [0x80]],
    ['an overlong encoding of "/"', [0xc0, 0xaf]],
    ['a UTF-16 surrogate encoded as UTF-8 (CESU)', [0xed, 0xa0, 0x80]],
    ['a truncated 3-byte sequence', [0xe2, 0x82]],
    ['a code point above U+10FFFF', [0xf4, 0x90, 0x80, 0x80]],
    ['byte 0xFF', [0xff]],
  ])('rejects %s with PROTOCOL_INVALID_JSON', (_name, bytes) => {
    expect(codeOf(withBytes(...bytes), 'tool.result')).toBe('PROTOCOL_INVALID_JSON')
  })

  it.each([
    ['empty', ''],
    ['whitespace only', '  \n'],
    ['a bare word', 'approve'],
    ['single quotes', "{'v':1}"],
    ['a trailing comma', '{"v":1,"type":"control.status",}'],
    ['a comment', '{"v":1,"type":"control.status"} // ok'],
    ['two documents', '{"v":1,"type":"control.status"}\n{"v":1,"type":"control.status"}'],
    ['NaN', '{"v":1,"type":"run.heartbeat","runId":"run_1","at":NaN}'],
    ['a raw control character in a string', '{"v":1,"type":"tool.result","callId":"c","output":"a\u0001b"}'],
  ])('rejects %s with PROTOCOL_INVALID_JSON', (_name, text) => {
    expect(codeOf(text, 'control.status')).toBe('PROTOCOL_INVALID_JSON')
  })

  it.each([
    ['null', 'null'],
    ['an array', '[{"v":1,"type":"control.status"}]'],
    ['a string', '"control.status"'],
    ['a number', '1'],
    ['true', 'true'],
  ])('rejects JSON that is not an object (%s) with PROTOCOL_INVALID_MESSAGE', (_name, text) => {
    expect(codeOf(text, 'control.status')).toBe('PROTOCOL_INVALID_MESSAGE')
  })

  it('ignores whitespace around the object', () => {
    expect(codeOf(' \r\n{"v":1,"type":"control.status"}\n', 'control.status')).toBe('ok')
  })
})

describe('robustness', () => {
  // Deterministic pseudo-random bytes (mulberry32), so a failure reproduces.
  function random(seed: number): () => number {
    let a = seed
    return () => {
      a = (a + 0x6d2b79f5) | 0
      let t = Math.imul(a ^ (a >>> 15), 1 | a)
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296
    }
  }

  it('never throws, and only ever returns one of the five codes, on mutated fixtures and random bytes', () => {
    const next = random(20251129)
    const types = Object.keys(PROTOCOL_MESSAGES) as (keyof typeof PROTOCOL_MESSAGES)[]
    let rejected = 0
    for (let i = 0; i < 2000; i++) {
      const fixture = valid[Math.floor(next() * valid.length)] as (typeof valid)[number]
      let data: Uint8Array
      if (i % 3 === 0) {
        data = new Uint8Array(Math.floor(next() * 64)).map(() => Math.floor(next() * 256))
      } else {
        data = fixture.bytes.slice()
        const flips = 1 + Math.floor(next() * 4)
        for (let f = 0; f < flips; f++) data[Math.floor(next() * data.length)] = Math.floor(next() * 256)
        if (i % 5 === 0) data = data.slice(0, Math.floor(next() * data.length))
      }
      const type = i % 2 === 0 ? fixture.type : (types[Math.floor(next() * types.length)] as keyof typeof PROTOCOL_MESSAGES)
      const result = decodeMessage(data, schemaOf(type), { maxBytes: 4096 })
      if (!result.ok) {
        rejected++
        expect(PROTOCOL_ERROR_CODES).toContain(result.error.code)
      }
    }
    expect(rejected).toBeGreaterThan(1000)
  })

  it('deeply nested arguments do not crash the decoder', () => {
    const deep = `${'['.repeat(5000)}${']'.repeat(5000)}`
    const text = `{"v":1,"type":"tool.call","callId":"c","toolName":"t","agentId":"a","runId":"r","arguments":${deep},"deadline":1}`
    expect(['ok', 'PROTOCOL_INVALID_MESSAGE', 'PROTOCOL_INVALID_JSON']).toContain(codeOf(text, 'tool.call'))
  })

  it('__proto__ in a payload does not pollute anything', () => {
    const text =
      '{"v":1,"type":"tool.call","callId":"c","toolName":"t","agentId":"a","runId":"r","arguments":{"__proto__":{"polluted":true}},"deadline":1}'
    const decoded = decodeOk(text, 'tool.call')
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
    expect(JSON.stringify(decoded.arguments)).toBe('{"__proto__":{"polluted":true}}')
  })

  it('payloadSample keeps rejection samples short', () => {
    const sample = payloadSample(new TextEncoder().encode('x'.repeat(2000)))
    expect(sample.length).toBeLessThanOrEqual(201)
    expect(
      decodeOk(
        JSON.stringify({
          v: 1,
          type: 'rejection',
          component: 'c',
          subject: 's',
          error: { code: 'X', message: 'm' },
          sample,
          at: 1,
        }),
        'rejection',
      ).sample,
    ).toBe(sample)
  })
})

/** Rules of `docs/protocol.md` that go beyond a field's type (tokens, ids, blank text, forward compatibility). */
describe('schema rules stated in docs/protocol.md', () => {
  const request = fixtureJson(
    valid.find((f) => f.type === 'approval.request' && f.description === undefined) as (typeof valid)[number],
  )
  const steer = fixtureJson(valid.find((f) => f.type === 'steer' && f.description === undefined) as (typeof valid)[number])
  const rejection = fixtureJson(valid.find((f) => f.type === 'rejection') as (typeof valid)[number])
  const runRequest = fixtureJson(
    valid.find((f) => f.type === 'run.request' && f.description === undefined) as (typeof valid)[number],
  )

  const audit = fixtureJson(valid.find((f) => f.type === 'audit' && f.description === undefined) as (typeof valid)[number])
  const reject = 'PROTOCOL_INVALID_MESSAGE'
  const cases: [string, keyof typeof PROTOCOL_MESSAGES, Record<string, unknown>, 'ok' | typeof reject][] = [
    ['token: agent id of 65 characters (§1.4: 1–64)', 'approval.request', { ...request, agentId: 'a'.repeat(65) }, reject],
    ['token: agent id with "/" (§1.4: [A-Za-z0-9_-])', 'approval.request', { ...request, agentId: 'claw/west' }, reject],
    ['token: agent id with non-ASCII (§1.4: [A-Za-z0-9_-])', 'approval.request', { ...request, agentId: 'garçon' }, reject],
    ['token: tool name with ":" (§1.4: [A-Za-z0-9_-])', 'approval.request', { ...request, toolName: 'claw:refund' }, reject],
    [
      'id with CR LF (§1.4: ids go into Nats-Msg-Id headers)',
      'approval.request',
      { ...request, requestId: 'request_1\r\nNats-Msg-Id: x' },
      reject,
    ],
    [
      'steer text of whitespace only (§6.1; today the agent refuses it after decoding, the schema accepts it)',
      'steer',
      { ...steer, text: ' \n\t ' },
      reject,
    ],
    ['rejection component that is not a token (§11)', 'rejection', { ...rejection, component: 'agent.claw' }, reject],
    [
      'run.request runId that is not a token (§15: it becomes a subject token)',
      'run.request',
      { ...runRequest, runId: 'run.1' },
      reject,
    ],
    [
      'an audit kind added later in v1 is accepted (§10.1, §14: new audit kinds are additive)',
      'audit',
      { ...audit, entry: { ...(audit.entry as object), kind: 'budget.exceeded' } },
      'ok',
    ],
  ]

  it.each(cases)('%s', (_name, type, message, expected) => {
    expect(codeOf(JSON.stringify(message), type)).toBe(expected)
  })
})

describe('what a rejection repeats back to the sender', () => {
  it('is bounded: a huge type or thousands of issues cannot blow up the error reply', () => {
    const hugeType = decodeMessage(JSON.stringify({ v: 1, type: 'x'.repeat(100_000) }), ToolResultMessage)
    expect(hugeType.ok).toBe(false)
    if (hugeType.ok) return
    expect(hugeType.error.code).toBe('PROTOCOL_UNEXPECTED_TYPE')
    expect(hugeType.error.message.length).toBeLessThan(200)
    expect(JSON.stringify(hugeType.error.toJSON()).length).toBeLessThan(500)

    const manyIssues = decodeMessage(
      JSON.stringify({
        v: 1,
        type: 'tool.result',
        callId: 7,
        output: 8,
        ...Object.fromEntries(Array.from({ length: 5 }, (_, i) => [`f${i}`, i])),
      }),
      ToolResultMessage.extend(
        Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`r${i}`, ToolResultMessage.shape.output])),
      ),
    )
    expect(manyIssues.ok).toBe(false)
    if (manyIssues.ok) return
    expect(manyIssues.error.code).toBe('PROTOCOL_INVALID_MESSAGE')
    expect(manyIssues.error.message).toMatch(/\(\+\d+ more\)/)
    expect(manyIssues.error.message.length).toBeLessThanOrEqual(2000)
    expect(manyIssues.error.details?.issues).toHaveLength(20)
  })
})

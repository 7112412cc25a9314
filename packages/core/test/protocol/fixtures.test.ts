/**
 * The frozen v1 samples (`fixtures/v1/`): every valid one decodes with the schema of its type,
 * every invalid one fails with exactly the code its file name announces. A change to
 * `schemas.ts` that breaks one of these is a breaking change to protocol v1.
 */
import { describe, expect, it } from 'vitest'
import { callDigest } from '../../src/hitl/digest.ts'
import { decodeMessage } from '../../src/protocol/codec.ts'
import { PROTOCOL_MESSAGES } from '../../src/protocol/schemas.ts'
import { fixtureJson, invalidFixtures, PROTOCOL_ERROR_CODES, schemaOf, validFixtures } from './helpers.ts'

const valid = validFixtures()
const invalid = invalidFixtures()

describe('valid v1 fixtures', () => {
  it.each(valid.map((f) => [f.file, f] as const))('%s decodes with its schema', (_file, fixture) => {
    const result = decodeMessage(fixture.bytes, schemaOf(fixture.type))
    if (!result.ok) expect.fail(`${fixture.file}: ${result.error.code} ${result.error.message}`)
    const message = result.value as { v: unknown; type: unknown }
    expect(message.type).toBe(fixture.type)
    expect(message.v).toBe(1)
  })

  it.each(valid.filter((f) => f.description !== 'unknown-fields').map((f) => [f.file, f] as const))(
    '%s decodes to exactly its JSON (the schemas neither drop nor rewrite defined fields)',
    (_file, fixture) => {
      const result = decodeMessage(fixture.bytes, schemaOf(fixture.type))
      expect(result.ok && result.value).toEqual(fixtureJson(fixture))
    },
  )

  it('covers every message type of PROTOCOL_MESSAGES', () => {
    const covered = new Set(valid.map((f) => f.type))
    const missing = Object.keys(PROTOCOL_MESSAGES).filter((type) => !covered.has(type as keyof typeof PROTOCOL_MESSAGES))
    expect(missing, 'add valid/<type>.json for each').toEqual([])
  })

  it('are pretty-printed UTF-8 JSON ending with a newline (readable diffs, no BOM)', () => {
    for (const fixture of valid) {
      const text = new TextDecoder('utf-8', { fatal: true }).decode(fixture.bytes)
      expect(text.charCodeAt(0), fixture.file).not.toBe(0xfeff)
      expect(text, fixture.file).toBe(`${JSON.stringify(JSON.parse(text), null, 2)}\n`)
    }
  })

  it('carry real digests: every approval.request digest is sha256 of the canonical {arguments, toolName}', () => {
    const requests = valid.filter((f) => f.type === 'approval.request')
    expect(requests.length).toBeGreaterThanOrEqual(3)
    for (const fixture of requests) {
      const message = fixtureJson(fixture)
      expect(message.digest, fixture.file).toBe(callDigest(message.toolName as string, message.arguments))
    }
  })

  it('quote their request: each decision has the requestId, callId and digest of a request fixture', () => {
    const requests = new Map(
      valid
        .filter((f) => f.type === 'approval.request')
        .map((f) => {
          const message = fixtureJson(f)
          return [message.requestId as string, message] as const
        }),
    )
    const decisions = valid.filter((f) => f.type === 'approval.decision')
    expect(decisions.length).toBeGreaterThanOrEqual(2)
    for (const fixture of decisions) {
      const decision = fixtureJson(fixture)
      const request = requests.get(decision.requestId as string)
      expect(request, `${fixture.file}: no request fixture with this requestId`).toBeDefined()
      expect(decision.callId, fixture.file).toBe(request?.callId)
      expect(decision.digest, fixture.file).toBe(request?.digest)
    }
  })

  it('answers quote a question fixture', () => {
    const questionIds = new Set(valid.filter((f) => f.type === 'question').map((f) => fixtureJson(f).questionId))
    for (const fixture of valid.filter((f) => f.type === 'answer')) {
      expect(questionIds.has(fixtureJson(fixture).questionId), fixture.file).toBe(true)
    }
  })

  it('audit digests match what they say was shown', () => {
    for (const fixture of valid.filter((f) => f.type === 'audit')) {
      const entry = fixtureJson(fixture).entry as Record<string, unknown>
      if (typeof entry.digest !== 'string') continue
      expect(entry.digest, fixture.file).toBe(callDigest(entry.toolName as string, entry.shown))
    }
  })
})

describe('invalid v1 fixtures', () => {
  it.each(invalid.map((f) => [f.file, f] as const))('%s is rejected with the code in its name', (_file, fixture) => {
    const result = decodeMessage(fixture.bytes, schemaOf(fixture.type))
    if (result.ok) expect.fail(`${fixture.file} was accepted: ${JSON.stringify(result.value).slice(0, 200)}`)
    expect(result.error.code).toBe(fixture.code)
    expect(result.error.fault).toBe('peer')
    expect(result.error.message.length).toBeGreaterThan(0)
  })

  it('are rejected the same way when the payload arrives as a string', () => {
    for (const fixture of invalid) {
      // A string cannot carry invalid UTF-8: those samples only exist as bytes.
      if (fixture.description.includes('latin1')) continue
      const result = decodeMessage(new TextDecoder().decode(fixture.bytes), schemaOf(fixture.type))
      expect(result.ok ? 'accepted' : result.error.code, fixture.file).toBe(fixture.code)
    }
  })

  it('exercise every decode failure except size (size depends on the receiver: see codec.test.ts)', () => {
    const codes = new Set(invalid.map((f) => f.code))
    for (const code of PROTOCOL_ERROR_CODES) if (code !== 'PROTOCOL_TOO_LARGE') expect(codes, code).toContain(code)
  })

  it('include at least one rejection per major message family', () => {
    const types = new Set(invalid.map((f) => f.type))
    for (const type of [
      'approval.request',
      'approval.decision',
      'question',
      'answer',
      'steer',
      'tool.call',
      'tool.result',
    ] as const) {
      expect(types, type).toContain(type)
    }
  })

  it('PROTOCOL_UNEXPECTED_TYPE samples are otherwise well-formed or lack only their type', () => {
    // So the code really is about the type, not about some other broken field.
    for (const fixture of invalid.filter((f) => f.code === 'PROTOCOL_UNEXPECTED_TYPE')) {
      const json = fixtureJson(fixture)
      expect(json.v, fixture.file).toBe(1)
    }
  })
})

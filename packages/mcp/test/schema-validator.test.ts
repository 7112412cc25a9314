import { ConfigError } from '@signalbox/core'
import { describe, expect, it } from 'vitest'
import { resultText, signalboxToolName } from '../src/index.ts'
import { compileArgumentsValidator } from '../src/schema-validator.ts'
import { mapToolNames } from '../src/tool-names.ts'

describe('compileArgumentsValidator', () => {
  it('draft-07: types, required, enums and formats, one issue per problem with its path', () => {
    const validate = compileArgumentsValidator(
      {
        $schema: 'http://json-schema.org/draft-07/schema#',
        type: 'object',
        properties: {
          city: { type: 'string', enum: ['Bern', 'Basel'] },
          at: { type: 'string', format: 'date-time' },
          seats: { type: 'array', items: { type: 'integer', minimum: 1 } },
        },
        required: ['city'],
        additionalProperties: false,
      },
      'book',
    )
    expect(validate({ city: 'Bern', at: '2026-12-01T10:00:00Z', seats: [1, 2] })).toEqual({
      ok: true,
      value: { city: 'Bern', at: '2026-12-01T10:00:00Z', seats: [1, 2] },
    })
    const result = validate({ at: 'tomorrow', seats: [1, 0], extra: true })
    expect(result.ok).toBe(false)
    expect(result.ok ? [] : result.issues).toEqual([
      "city: must have required property 'city'",
      'extra: must NOT have additional properties',
      'at: must match format "date-time"',
      'seats.1: must be >= 1',
    ])
    expect(validate({ city: 'Zug' })).toEqual({
      ok: false,
      issues: ['city: must be equal to one of the allowed values: ["Bern","Basel"]'],
    })
  })

  it('2020-12 (the MCP default): $defs and $ref; no defaults filled in, no coercion', () => {
    const validate = compileArgumentsValidator(
      {
        type: 'object',
        $defs: { stop: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] } },
        properties: { stops: { type: 'array', items: { $ref: '#/$defs/stop' } }, count: { type: 'number', default: 3 } },
      },
      'route',
    )
    const args = { stops: [{ name: 'Olten' }] }
    expect(validate(args)).toEqual({ ok: true, value: { stops: [{ name: 'Olten' }] } })
    expect(validate({ stops: [{}], count: '3' })).toEqual({
      ok: false,
      issues: ["stops.0.name: must have required property 'name'", 'count: must be number'],
    })
  })

  it('a schema that cannot be compiled is a ConfigError naming the tool', () => {
    expect(() => compileArgumentsValidator({ type: 'object', properties: { a: { $ref: '#/nowhere' } } }, 'broken')).toThrow(
      ConfigError,
    )
  })
})

describe('tool names', () => {
  it('characters the chat API refuses become "_", the prefix goes first, at most 64 characters', () => {
    expect(signalboxToolName('files.read/all', 'fs_')).toBe('fs_files_read_all')
    expect(signalboxToolName('x'.repeat(100))).toHaveLength(64)
  })

  it('two MCP names that map to one name are a ConfigError', () => {
    expect(() => mapToolNames('srv', ['a.b', 'a_b'])).toThrow(/tools "a.b" and "a_b" would both be named "a_b"/)
  })
})

describe('resultText', () => {
  it('text as is; binary content as a short note; structured content when there is no text', () => {
    expect(
      resultText({
        content: [
          { type: 'text', text: 'line one' },
          { type: 'image', mimeType: 'image/png', data: 'AAAA' },
          { type: 'resource', resource: { uri: 'file:///a.txt', text: 'inside' } },
          { type: 'resource_link', uri: 'file:///b.txt', name: 'b' },
        ],
      }),
    ).toBe('line one\n[image image/png, 3 bytes]\ninside\n[resource file:///b.txt "b"]')
    expect(resultText({ content: [], structuredContent: { temperature: 21 } })).toBe('{"temperature":21}')
  })
})

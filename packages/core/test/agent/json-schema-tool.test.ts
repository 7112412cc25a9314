import { ConfigError, createAgent, jsonSchemaTool, type ValidationResult } from '@signalbox/core'
import { ScriptedProvider } from '@signalbox/core/testing'
import { describe, expect, it } from 'vitest'
import { toolResultIn } from './helpers.ts'

/** A hand-written validator: what a JSON Schema library would plug in. */
const needsCity = (args: unknown): ValidationResult<{ city: string }> =>
  typeof (args as { city?: unknown }).city === 'string'
    ? { ok: true, value: args as { city: string } }
    : { ok: false, issues: ['city: must be string'] }

describe('jsonSchemaTool', () => {
  it('sends the raw JSON Schema (without $schema), validates with the given validator, then runs', async () => {
    const seen: unknown[] = []
    const weather = jsonSchemaTool({
      name: 'weather',
      description: 'Weather in a city.',
      parameters: {
        $schema: 'https://json-schema.org/draft/2020-12/schema',
        type: 'object',
        properties: { city: { type: 'string' } },
        required: ['city'],
      },
      validate: needsCity,
      execute: (args) => {
        seen.push(args)
        return `sunny in ${args.city}`
      },
    })
    const provider = new ScriptedProvider({
      script: [
        { toolCalls: [{ id: 'c1', name: 'weather', arguments: { city: 7 } }] },
        { toolCalls: [{ id: 'c2', name: 'weather', arguments: { city: 'Bern' } }] },
        { content: 'done' },
      ],
    })
    await createAgent({ provider, tools: [weather] }).run('weather?')
    expect(provider.requests[0]?.tools[0]?.parameters).toEqual({
      type: 'object',
      properties: { city: { type: 'string' } },
      required: ['city'],
    })
    expect(toolResultIn(provider.requests[1]?.messages ?? [], 'c1')).toContain('city: must be string')
    expect(seen).toEqual([{ city: 'Bern' }])
    expect(toolResultIn(provider.requests[2]?.messages ?? [], 'c2')).toBe('sunny in Bern')
  })

  it('a bad name or a schema that is not an object is a ConfigError', () => {
    const base = { description: '', validate: needsCity, execute: () => '' }
    expect(() => jsonSchemaTool({ ...base, name: 'a.b', parameters: { type: 'object' } })).toThrow(ConfigError)
    expect(() => jsonSchemaTool({ ...base, name: 'ok', parameters: { type: 'string' } })).toThrow(/must be of type "object"/)
  })
})

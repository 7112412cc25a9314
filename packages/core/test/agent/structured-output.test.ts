import { ConfigError, createAgent, OpenAIProvider, type RunResult } from '@signalbox/core'
import { type ScriptedModelServer, type Scripts, startScriptedModelServer } from '@signalbox/core/testing'
import { afterEach, describe, expect, expectTypeOf, it } from 'vitest'
import { z } from 'zod'
import { fitsStrictMode } from '../../src/output.ts'
import { runFailure } from './helpers.ts'

const open: ScriptedModelServer[] = []
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()))
})

async function serve(scripts: Scripts): Promise<ScriptedModelServer> {
  const server = await startScriptedModelServer({ scripts })
  open.push(server)
  return server
}

const Trip = z.object({ destination: z.string(), seats: z.number().int().min(1), seatClass: z.enum(['first', 'tourist']) })
const body = (server: ScriptedModelServer, i: number) => server.requests[i]?.body as Record<string, unknown>

function agentOn(server: ScriptedModelServer) {
  return createAgent({
    provider: new OpenAIProvider({ baseURL: server.url, model: 'm1', apiKey: 'test' }),
    output: Trip,
  })
}

describe('structured output', () => {
  it('sends the schema as a strict response_format and returns the parsed answer, typed', async () => {
    const server = await serve({ m1: [{ content: '{"destination":"Mar del Plata","seats":2,"seatClass":"first"}' }] })
    const result = await agentOn(server).run('Two first-class seats to Mar del Plata.')

    expect(result.output).toEqual({ destination: 'Mar del Plata', seats: 2, seatClass: 'first' })
    expectTypeOf(result.output).toEqualTypeOf<{ destination: string; seats: number; seatClass: 'first' | 'tourist' }>()
    expect(body(server, 0).response_format).toEqual({
      type: 'json_schema',
      json_schema: {
        name: 'output',
        strict: true,
        schema: {
          type: 'object',
          properties: {
            destination: { type: 'string' },
            seats: { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER },
            seatClass: { type: 'string', enum: ['first', 'tourist'] },
          },
          required: ['destination', 'seats', 'seatClass'],
          additionalProperties: false,
        },
      },
    })
  })

  it('an agent without output keeps text answers and sends no response_format', async () => {
    const server = await serve({ m1: [{ content: 'plain' }] })
    const agent = createAgent({ provider: new OpenAIProvider({ baseURL: server.url, model: 'm1', apiKey: 'test' }) })
    const result = await agent.run('hi')
    expectTypeOf(result).toEqualTypeOf<RunResult<string>>()
    expect(result.output).toBe('plain')
    expect(body(server, 0)).not.toHaveProperty('response_format')
  })

  it('gives the model one retry with the validation errors', async () => {
    const server = await serve({
      m1: [
        { content: '{"destination":"Mar del Plata","seats":0,"seatClass":"business"}' },
        { content: '{"destination":"Mar del Plata","seats":1,"seatClass":"tourist"}' },
      ],
    })
    const result = await agentOn(server).run('One seat.')
    expect(result.output).toEqual({ destination: 'Mar del Plata', seats: 1, seatClass: 'tourist' })
    expect(result.turns).toBe(2)
    const retry = server.requests[1]?.messages.at(-1)
    expect(retry?.role).toBe('user')
    expect(retry?.content).toMatch(
      /^Your answer does not match the required JSON schema: seats: .*; seatClass: .*\. Answer again/,
    )
    expect(body(server, 1).response_format).toEqual(body(server, 0).response_format)
  })

  it('fails with OUTPUT_INVALID when the retry does not match either', async () => {
    const server = await serve({ m1: [{ content: 'Sure! Two seats.' }, { content: '{"destination":"Mar del Plata"}' }] })
    const error = await runFailure(agentOn(server).run('Two seats.'))
    expect(error.code).toBe('OUTPUT_INVALID')
    expect(error.result.stopReason).toBe('invalid_output')
    expect(error.result.error).toMatchObject({ code: 'OUTPUT_INVALID', name: 'OutputValidationError', fault: 'model' })
    expect(error.message).toMatch(/does not match the output schema, even after one retry: seats: .*seatClass/)
    expect(server.requests[1]?.messages.at(-1)?.content).toContain('the answer is not valid JSON')
    server.assertDone()
  })

  it('sends a schema strict mode cannot take without strict', async () => {
    const server = await serve({ m1: [{ content: '{"note":"hi"}' }] })
    const agent = createAgent({
      provider: new OpenAIProvider({ baseURL: server.url, model: 'm1', apiKey: 'test' }),
      output: z.object({ note: z.string().optional() }),
    })
    const result = await agent.run('hi')
    expectTypeOf(result.output).toEqualTypeOf<{ note?: string | undefined }>()
    expect(result.output).toEqual({ note: 'hi' })
    expect((body(server, 0).response_format as { json_schema: { strict: boolean } }).json_schema.strict).toBe(false)
  })

  it('knows which schemas fit strict mode', () => {
    expect(fitsStrictMode({ type: 'array', items: { type: 'string' } })).toBe(false)
    expect(
      fitsStrictMode({ type: 'object', properties: { a: { type: 'string' } }, required: ['a'], additionalProperties: false }),
    ).toBe(true)
    expect(fitsStrictMode({ type: 'object', properties: { a: { type: 'string' } }, required: ['a'] })).toBe(false)
  })

  it('refuses an output that is not a zod schema', () => {
    const provider = new OpenAIProvider({ baseURL: 'http://127.0.0.1:9/v1', model: 'm1', apiKey: 'test' })
    expect(() => createAgent({ provider, output: { type: 'object' } as never })).toThrow(ConfigError)
  })
})

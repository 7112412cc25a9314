/**
 * The hooks seed end to end: the trains agent talks to the scripted model server over HTTP
 * through the real openai SDK (`OpenAIProvider`), and the tests check what the model was sent.
 */
import type { Hooks } from '@signalbox/core'
import type { ScriptStep } from '@signalbox/core/testing'
import {
  bookTicket,
  createTrainsAgent,
  FIRST_CLASS_REASON,
  findTrains,
  firstClassPolicy,
  maskIds,
  PASSENGER,
} from '@signalbox/examples/trains/agent.ts'
import { TRAINS_ANSWER, TRAINS_MODEL, TRAINS_PROMPT, trainsScript } from '@signalbox/examples/trains/script.ts'
import { describe, expect, it } from 'vitest'
import { runExample } from './support/run-example.ts'
import { eventsOf, lastMessage, onlyCall, recordEvents, scriptedModel } from './support/scripted.ts'

const RAW_ID = PASSENGER.dni // '12.345.678'

async function runTrains(options: { hooks?: Hooks[]; script?: ScriptStep[] } = {}) {
  const { server, provider } = await scriptedModel({ [TRAINS_MODEL]: options.script ?? trainsScript })
  const agent = createTrainsAgent({ provider: provider(TRAINS_MODEL), ...(options.hooks ? { hooks: options.hooks } : {}) })
  const events = recordEvents(agent)
  const result = await agent.run(TRAINS_PROMPT)
  return { server, agent, events, result }
}

describe('trains: a policy hook and a masking hook, over HTTP', () => {
  it('sends the model the refusal reason as the tool result, and the model books tourist instead', async () => {
    const { server, events, result } = await runTrains()
    server.assertDone()
    expect(server.requests).toHaveLength(4)

    const firstClass = onlyCall(result.messages, 'book_ticket', { train: 101, seat_class: 'first' })
    const tourist = onlyCall(result.messages, 'book_ticket', { train: 101, seat_class: 'tourist' })
    // The request after the first-class attempt ends with the refusal, exactly as the hook wrote it.
    expect(lastMessage(server.requests[2])).toEqual({ role: 'tool', tool_call_id: firstClass.id, content: FIRST_CLASS_REASON })
    // ...and the next one with the tourist booking.
    const booked = lastMessage(server.requests[3])
    expect(booked).toMatchObject({ role: 'tool', tool_call_id: tourist.id })
    expect(booked?.content).toContain('Booked: train 101 to Mar del Plata, tourist class')

    // The tool never ran for first class: only the tourist booking started.
    const started = eventsOf(events, 'tool.start').filter((e) => e.toolName === 'book_ticket')
    expect(started.map((e) => e.arguments)).toEqual([{ train: 101, seat_class: 'tourist' }])
    const ended = eventsOf(events, 'tool.end').filter((e) => e.toolName === 'book_ticket')
    expect(ended.map((e) => [e.outcome, e.isError])).toEqual([
      ['denied', true],
      ['executed', false],
    ])
  })

  it('never lets the raw ID reach the model or any event; the masked ticket does reach it', async () => {
    const { server, events, result } = await runTrains()
    expect(server.requests).toHaveLength(4)
    for (const request of server.requests) expect(JSON.stringify(request.body)).not.toContain(RAW_ID)
    expect(events.length).toBeGreaterThan(20)
    for (const event of events) expect(JSON.stringify(event)).not.toContain(RAW_ID)
    expect(JSON.stringify(result.messages)).not.toContain(RAW_ID)

    // Not vacuous: the booking (with its masked ID) was in what the model read, and in the event.
    expect(lastMessage(server.requests[3])?.content).toContain(`${PASSENGER.name} (DNI ***)`)
    const booking = eventsOf(events, 'tool.end').find((e) => e.toolName === 'book_ticket' && e.outcome === 'executed')
    expect(booking?.output).toContain('(DNI ***)')
  })

  it('without maskIds the ID does reach the model (the tool really prints it)', async () => {
    // The last step's own check would refuse the unmasked request; drop it for this control run.
    const script = trainsScript.map((step, i) => (i === trainsScript.length - 1 ? { ...step, expect: undefined } : step))
    const { server } = await runTrains({ hooks: [firstClassPolicy()], script })
    expect(JSON.stringify(server.requests[3]?.body)).toContain(`DNI ${RAW_ID}`)
  })

  it('ends with the final answer, four turns and the usage the endpoint reported', async () => {
    const { events, result } = await runTrains()
    expect(result.status).toBe('done')
    expect(result.stopReason).toBe('final_answer')
    expect(result.output).toBe(TRAINS_ANSWER)
    expect(result.turns).toBe(4)
    const reported = eventsOf(events, 'model.response').reduce((sum, e) => sum + (e.usage?.totalTokens ?? 0), 0)
    expect(reported).toBeGreaterThan(0)
    expect(result.usage.totalTokens).toBe(reported)
    expect(eventsOf(events, 'run.end')).toMatchObject([{ status: 'done', output: TRAINS_ANSWER, turns: 4 }])
  })

  it('sends the seed’s two tools with their schemas, streamed through the openai SDK', async () => {
    const { server } = await runTrains()
    const [first] = server.requests
    expect(first?.stream).toBe(true)
    expect(first?.headers['user-agent']).toMatch(/^OpenAI\/JS/)
    expect(first?.messages).toEqual([{ role: 'user', content: TRAINS_PROMPT }])
    expect(first?.tools.map((t) => t.name)).toEqual(['find_trains', 'book_ticket'])
    expect(first?.tools[0]?.parameters).toMatchObject({
      type: 'object',
      properties: { to: { type: 'string' }, date: { type: 'string' } },
      required: ['to', 'date'],
    })
    expect(first?.tools[1]?.parameters).toMatchObject({
      type: 'object',
      properties: { train: { type: 'integer' }, seat_class: { enum: ['first', 'tourist'] } },
      required: ['train', 'seat_class'],
    })
  })
})

describe('trains: the hooks and tools on their own', () => {
  const base = { agentId: 'trains', runId: 'run_1', turn: 1, signal: new AbortController().signal, callId: 'call_1' }

  it('firstClassPolicy denies first class with the seed’s reason and allows everything else', async () => {
    const gate = firstClassPolicy().beforeToolExecution!
    expect(await gate({ ...base, toolName: 'book_ticket', input: { train: 101, seat_class: 'first' } })).toEqual({
      action: 'deny',
      reason: 'Blocked by policy: first class needs a manager’s approval. Book tourist instead.',
    })
    expect(await gate({ ...base, toolName: 'book_ticket', input: { train: 101, seat_class: 'tourist' } })).toEqual({
      action: 'allow',
    })
    expect(await gate({ ...base, toolName: 'find_trains', input: { to: 'Rosario', date: 'Friday' } })).toEqual({
      action: 'allow',
    })
  })

  it('maskIds replaces every DNI number and nothing else', async () => {
    const mask = maskIds().afterToolExecution!
    const output = 'Ana (DNI 12.345.678) and Juan (DNI 9.876.543), train 101.'
    expect(await mask({ ...base, toolName: 'book_ticket', input: {}, output, isError: false })).toBe(
      'Ana (DNI ***) and Juan (DNI ***), train 101.',
    )
  })

  it('the timetable is deterministic and booking prints the passenger’s ID', async () => {
    const context = {} as never
    expect(await findTrains.execute({ to: 'mar del plata', date: 'Friday' }, context)).toContain('train 101: 07:10 -> 12:25')
    expect(await bookTicket.execute({ train: 101, seat_class: 'tourist' }, context)).toContain(`(DNI ${RAW_ID})`)
    await expect(bookTicket.execute({ train: 999, seat_class: 'tourist' }, context)).rejects.toThrow(/no train 999/)
  })
})

// What `pnpm demo` runs (root package.json: "demo": "tsx examples/trains/demo.ts").
const DEMO = 'examples/trains/demo.ts'

describe('pnpm demo (examples/trains/demo.ts)', () => {
  it('runs offline, exits 0, and prints the states, the deny reason and the final answer, never the raw ID', async () => {
    const { code, stdout, stderr } = await runExample(DEMO)
    expect(stderr).toBe('')
    expect(code).toBe(0)
    expect(stdout).toContain('running.turn.callingModel')
    expect(stdout).toContain('running.turn.toolCalls.executingTool')
    expect(stdout).toContain(`deny ${JSON.stringify(FIRST_CLASS_REASON)}`)
    expect(stdout).toContain('(DNI ***)')
    expect(stdout).toContain(`Final answer\n  ${TRAINS_ANSWER}\n`)
    expect(stdout).toMatch(/✔ done · 4 turns · 4 model calls · 3 tool calls \(2 executed, 1 denied\) · \d+ tokens/)
    expect(stdout).not.toContain(RAW_ID)
    // Piped, not a terminal: no colour codes.
    expect(stdout).not.toContain('\x1b[')
  })

  it('colours only when asked, and NO_COLOR wins', async () => {
    const [forced, refused] = await Promise.all([
      runExample(DEMO, [], { FORCE_COLOR: '1' }),
      runExample(DEMO, [], { FORCE_COLOR: '1', NO_COLOR: '1' }),
    ])
    expect(forced.code).toBe(0)
    expect(forced.stdout).toContain('\x1b[')
    expect(refused.code).toBe(0)
    expect(refused.stdout).not.toContain('\x1b[')
  })

  it('uses the endpoint from the environment when SIGNALBOX_MODEL is set, unless --scripted is passed', async () => {
    // Port 9 (discard) refuses connections: reaching for it proves the demo used the environment.
    const env = { SIGNALBOX_MODEL: 'no-such-model', OPENAI_BASE_URL: 'http://127.0.0.1:9/v1', OPENAI_API_KEY: 'none' }
    const [real, scripted] = await Promise.all([runExample(DEMO, [], env), runExample(DEMO, ['--scripted'], env)])
    expect(real.code).toBe(1)
    expect(real.stdout).toContain('no-such-model at http://127.0.0.1:9/v1')
    expect(real.stdout).toContain('Could not reach the model endpoint http://127.0.0.1:9/v1')
    expect(scripted.code).toBe(0)
    expect(scripted.stdout).toContain(TRAINS_ANSWER)
  })
})

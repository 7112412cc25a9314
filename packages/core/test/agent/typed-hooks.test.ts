/**
 * Per-tool types: the tool hooks and the reviewer see each call typed by the agent's tools, a union
 * on `toolName`, so narrowing on the name types the arguments with no cast; a tool known only by a
 * `string` name (remote, MCP, JSON Schema) and plain `Hooks` / `Reviewer` stay untyped. The types
 * are checked by `pnpm typecheck` (expectTypeOf, @ts-expect-error); the runs check the same hooks work.
 */
import {
  type ApprovalRequest,
  type ApprovalRequestOf,
  type BeforeToolExecutionContext,
  createAgent,
  decideApproval,
  deny,
  type Hooks,
  jsonSchemaTool,
  policyReviewer,
  type Reviewer,
  type ToolCallOf,
  tool,
} from '@signalbox/core'
import { ScriptedProvider } from '@signalbox/core/testing'
import { describe, expect, expectTypeOf, it } from 'vitest'
import { z } from 'zod'

const bookTicket = tool({
  name: 'book_ticket',
  description: 'Book one seat on a train.',
  schema: z.object({ train: z.number().int(), seat_class: z.enum(['first', 'tourist']) }),
  needsApproval: true,
  execute: ({ train, seat_class }) => `Booked a ${seat_class} seat on train ${train}.`,
})
const cancelBooking = tool({
  name: 'cancel_booking',
  description: 'Cancel a booking.',
  schema: z.object({ booking: z.string() }),
  execute: ({ booking }) => `Cancelled ${booking}.`,
})
/** A tool whose name is only a string at compile time, as remote and MCP tools are. */
const remote = jsonSchemaTool<{ q: string }>({
  name: 'search',
  description: 'Search.',
  parameters: { type: 'object', properties: { q: { type: 'string' } } },
  validate: (args) => ({ ok: true, value: args as { q: string } }),
  execute: ({ q }) => q,
})

type Seat = { train: number; seat_class: 'first' | 'tourist' }

const script = () =>
  new ScriptedProvider({
    script: [
      {
        toolCalls: [
          { id: 'c1', name: 'book_ticket', arguments: { train: 3, seat_class: 'first' } },
          { id: 'c2', name: 'cancel_booking', arguments: { booking: 'B-7' } },
          { id: 'c3', name: 'book_ticket', arguments: { train: 4, seat_class: 'tourist' } },
        ],
      },
      { content: 'Done.' },
    ],
  })

describe('per-tool types', () => {
  it('createAgent types the tool hooks and an inline reviewer from its tools; narrowing on toolName types the arguments', async () => {
    const seen: string[] = []
    const agent = createAgent({
      provider: script(),
      tools: [bookTicket, cancelBooking],
      hooks: {
        // No cast: after the name check, `input` is the tool's argument type.
        beforeToolExecution: ({ toolName, input }) => {
          if (toolName === 'book_ticket') {
            expectTypeOf(input).toEqualTypeOf<Seat>()
            return input.seat_class === 'first' ? deny('first class needs a manager') : undefined
          }
          expectTypeOf(toolName).toEqualTypeOf<'cancel_booking'>()
          expectTypeOf(input).toEqualTypeOf<{ booking: string }>()
          seen.push(input.booking)
          return undefined
        },
        afterToolExecution: (call) => {
          // @ts-expect-error: the union has no seat_class until narrowed
          call.input.seat_class
          return call.toolName === 'cancel_booking' ? `${call.output} (${call.input.booking})` : call.output
        },
      },
      reviewer: {
        async review(request) {
          expectTypeOf(request.toolName).toEqualTypeOf<'book_ticket' | 'cancel_booking'>()
          const train = request.toolName === 'book_ticket' ? request.arguments.train : 0
          seen.push(`review train ${train}`)
          return decideApproval(request, train === 4, 'policy', Date.now())
        },
      },
    })
    const ends: [string, string][] = []
    agent.on('tool.end', (event) => ends.push([event.outcome, event.output]))
    await agent.run('Book first class on train 3, cancel B-7, then tourist on train 4.')
    expect(ends).toEqual([
      ['denied', 'first class needs a manager'],
      ['executed', 'Cancelled B-7. (B-7)'],
      ['executed', 'Booked a tourist seat on train 4.'],
    ])
    expect(seen).toEqual(['B-7', 'review train 4'])
  })

  it('names a tool the agent does not have is a type error, and so is a field of another tool', () => {
    createAgent({
      provider: script(),
      tools: [bookTicket, cancelBooking],
      hooks: {
        beforeToolExecution: ({ toolName, input }) => {
          // @ts-expect-error: no such tool
          if (toolName === 'book_hotel') return undefined
          // @ts-expect-error: booking is cancel_booking's, not book_ticket's
          if (toolName === 'book_ticket' && input.booking) return undefined
          return undefined
        },
      },
    })
  })

  it('the types stand alone: Hooks<typeof tools>, ToolCallOf, ApprovalRequestOf and a typed policyReviewer', async () => {
    const tools = [bookTicket, cancelBooking]
    expectTypeOf<ToolCallOf<typeof tools>>().toEqualTypeOf<
      { toolName: 'book_ticket'; input: Seat } | { toolName: 'cancel_booking'; input: { booking: string } }
    >()
    const policy: Hooks<typeof tools> = {
      beforeToolExecution: ({ toolName, input }) =>
        toolName === 'book_ticket' && input.seat_class === 'first' ? deny('no first class') : undefined,
    }
    const reviewer = policyReviewer<ApprovalRequestOf<typeof tools>>((request) =>
      request.toolName === 'book_ticket' ? request.arguments.train === 4 : true,
    )
    expectTypeOf(reviewer).toEqualTypeOf<Reviewer<ApprovalRequestOf<typeof tools>>>()
    const agent = createAgent({ provider: script(), tools, hooks: [policy], reviewer })
    const outcomes: string[] = []
    agent.on('tool.end', (event) => outcomes.push(event.outcome))
    await agent.run('go')
    expect(outcomes).toEqual(['denied', 'executed', 'executed'])
  })

  it('untyped forms keep working: plain Hooks and Reviewer, and tools named only by a string', () => {
    expectTypeOf<BeforeToolExecutionContext['toolName']>().toEqualTypeOf<string>()
    expectTypeOf<BeforeToolExecutionContext['input']>().toEqualTypeOf<unknown>()
    const plain: Hooks = { beforeToolExecution: ({ toolName }) => (toolName === 'anything' ? deny('x') : undefined) }
    const anyReviewer: Reviewer = policyReviewer((request) => (request.arguments as { train?: number }).train === 4)
    createAgent({ provider: script(), tools: [bookTicket, cancelBooking], hooks: plain, reviewer: anyReviewer })
    // A tool whose name is a string makes that member of the union untyped.
    expectTypeOf<ToolCallOf<[typeof remote]>>().toEqualTypeOf<{ toolName: string; input: unknown }>()
    expectTypeOf<ApprovalRequestOf<[typeof remote]>>().toEqualTypeOf<ApprovalRequest>()
    createAgent({
      provider: script(),
      tools: [remote],
      hooks: { beforeToolExecution: ({ toolName, input }) => (toolName === 'search' && input ? undefined : undefined) },
    })
  })

  it('structured output agents get the same typing', () => {
    createAgent({
      provider: script(),
      tools: [bookTicket],
      output: z.object({ booked: z.boolean() }),
      hooks: { beforeToolExecution: ({ input }) => (input.train > 10 ? deny('no such train') : undefined) },
    })
  })
})

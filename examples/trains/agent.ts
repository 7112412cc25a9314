/**
 * The hooks seed (level 6): a travel assistant with two company rules that are not the model's
 * business. A policy hook refuses first class (the model reads why and books tourist instead),
 * and a masking hook keeps the passenger's ID number out of everything the model reads.
 */
import { type Agent, type AgentOptions, allow, createAgent, deny, type Hooks, tool } from '@signalbox/core'
import { z } from 'zod'

/** The employee who is asking. `book_ticket` puts their ID on the ticket; the model must never read it. */
export const PASSENGER = { name: 'Lucía Fernández', dni: '12.345.678' } as const

export const FIRST_CLASS_REASON = 'Blocked by policy: first class needs a manager’s approval. Book tourist instead.'

export const findTrains = tool({
  name: 'find_trains',
  description: 'List the trains to a destination on a date, with the fare for each class.',
  schema: z.object({ to: z.string(), date: z.string() }),
  execute: async ({ to, date }) => searchTimetable(to, date), // your code
})

export const bookTicket = tool({
  name: 'book_ticket',
  description: 'Book one seat on a train for the employee who is asking.',
  schema: z.object({ train: z.number().int(), seat_class: z.enum(['first', 'tourist']) }),
  execute: async ({ train, seat_class }) => reserveSeat(train, seat_class), // your code
})

/** The first booth: runs before every tool call, and decides whether it runs at all. */
export function firstClassPolicy(options: { reason?: string } = {}): Hooks {
  const reason = options.reason ?? FIRST_CLASS_REASON
  return {
    beforeToolExecution: async function firstClassPolicy({ toolName, input }) {
      const { seat_class } = input as { seat_class?: string }
      if (toolName === 'book_ticket' && seat_class === 'first') {
        // The tool never runs. The model reads this text as an error result instead.
        return deny(reason)
      }
      return allow()
    },
  }
}

/** The second booth: runs after every tool call. What it returns is what the model reads. */
export function maskIds(): Hooks {
  return {
    afterToolExecution: async function maskIds({ output }) {
      return output.replace(/DNI [\d.]+/g, 'DNI ***')
    },
  }
}

export interface TrainsAgentOptions extends Omit<AgentOptions, 'tools' | 'hooks'> {
  /** Replaces the default hooks, `[firstClassPolicy(), maskIds()]`. */
  hooks?: Hooks | Hooks[]
}

export function createTrainsAgent(options: TrainsAgentOptions): Agent {
  return createAgent({
    id: 'trains',
    maxTurns: 10,
    ...options,
    tools: [findTrains, bookTicket],
    hooks: options.hooks ?? [firstClassPolicy(), maskIds()],
  })
}

// --- "your code": a small, deterministic timetable -------------------------------------------

interface Departure {
  train: number
  departs: string
  arrives: string
  fares: { first: number; tourist: number }
}

const TIMETABLE: Record<string, { station: string; departures: Departure[] }> = {
  'mar del plata': {
    station: 'Mar del Plata',
    departures: [
      { train: 101, departs: '07:10', arrives: '12:25', fares: { first: 48_000, tourist: 21_500 } },
      { train: 205, departs: '15:40', arrives: '20:55', fares: { first: 48_000, tourist: 21_500 } },
    ],
  },
  rosario: {
    station: 'Rosario',
    departures: [{ train: 310, departs: '08:00', arrives: '13:50', fares: { first: 32_000, tourist: 14_000 } }],
  },
}

const ars = (amount: number) => `ARS ${amount.toLocaleString('en-US')}`

export function searchTimetable(to: string, date: string): string {
  const line = TIMETABLE[to.trim().toLowerCase()]
  if (!line) {
    const known = Object.values(TIMETABLE).map((l) => l.station)
    return `No trains to ${to} on ${date}. Destinations served: ${known.join(', ')}.`
  }
  const rows = line.departures.map(
    (d) => `- train ${d.train}: ${d.departs} -> ${d.arrives}, first ${ars(d.fares.first)}, tourist ${ars(d.fares.tourist)}`,
  )
  return [`Trains from Buenos Aires (Constitución) to ${line.station} on ${date}:`, ...rows].join('\n')
}

export function reserveSeat(train: number, seatClass: 'first' | 'tourist'): string {
  const found = Object.values(TIMETABLE)
    .flatMap((l) => l.departures.map((d) => ({ ...d, station: l.station })))
    .find((d) => d.train === train)
  if (!found) throw new Error(`There is no train ${train}. Call find_trains to see the trains that run.`)
  const seat = seatClass === 'first' ? '2A' : '14B'
  const code = `${seatClass === 'first' ? 'F' : 'T'}${train}-${seat}`
  return (
    `Booked: train ${train} to ${found.station}, ${seatClass} class, seat ${seat}, departs ${found.departs}, ` +
    `${ars(found.fares[seatClass])}, confirmation ${code}. Passenger: ${PASSENGER.name} (DNI ${PASSENGER.dni}).`
  )
}

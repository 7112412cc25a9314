/**
 * The hotel agent of the travel example. It runs in its own process (`signalbox host
 * examples/travel/hotel-host.ts`) and keeps its own rules: booking a room is irreversible, so
 * `book_hotel` waits for a person's approval, whoever delegated the task.
 */
import { type Agent, type AgentOptions, createAgent, tool } from '@signalbox/core'
import { z } from 'zod'

interface Hotel {
  name: string
  city: string
  walkToStation: string
  pricePerNight: number
}

const HOTELS: Hotel[] = [
  { name: 'Hotel Costa Galana', city: 'Mar del Plata', walkToStation: '8 min', pricePerNight: 96_000 },
  { name: 'Gran Hotel Provincial', city: 'Mar del Plata', walkToStation: '25 min', pricePerNight: 120_000 },
  { name: 'Hotel Ros Tower', city: 'Rosario', walkToStation: '12 min', pricePerNight: 88_000 },
]

const ars = (amount: number) => `ARS ${amount.toLocaleString('en-US')}`

export const findHotels = tool({
  name: 'find_hotels',
  description: 'List hotels in a city with the walk to the train station and the price per night.',
  schema: z.object({ city: z.string(), date: z.string() }),
  execute: async ({ city, date }) => {
    const found = HOTELS.filter((h) => h.city.toLowerCase() === city.trim().toLowerCase())
    if (found.length === 0) return `No hotels in ${city} on ${date}.`
    return [
      `Hotels in ${found[0]?.city} on ${date}:`,
      ...found.map((h) => `- ${h.name}: ${h.walkToStation} from the station, ${ars(h.pricePerNight)} a night`),
    ].join('\n')
  },
})

export const bookHotel = tool({
  name: 'book_hotel',
  description: 'Book a room. Irreversible: a person approves it first.',
  schema: z.object({ hotel: z.string(), date: z.string(), nights: z.number().int().min(1).max(14) }),
  needsApproval: true,
  execute: async ({ hotel, date, nights }) => {
    const found = HOTELS.find((h) => h.name === hotel)
    if (!found) throw new Error(`There is no hotel called ${hotel}. Call find_hotels first.`)
    const code = `H-${found.name.split(' ').at(-1)?.toUpperCase()}-${nights}N`
    return `Booked: ${found.name}, ${nights} night(s) from ${date}, ${ars(found.pricePerNight * nights)}, confirmation ${code}.`
  },
})

export const HOTEL_INSTRUCTIONS = 'You book hotels. Prefer hotels close to the train station. Book only what you are asked for.'

export function createHotelAgent(options: Omit<AgentOptions, 'tools' | 'id'>): Agent {
  return createAgent({ id: 'hotel', instructions: HOTEL_INSTRUCTIONS, maxTurns: 6, ...options, tools: [findHotels, bookHotel] })
}

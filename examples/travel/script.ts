/**
 * The travel conversation as data, for the scripted models: the planner delegates the train (the
 * trains agent plays the seed's own script, policy refusal and masking included) and the hotel
 * (one approval on the way), then answers. Each step checks what its agent sent.
 */
import type { ScriptStep } from '@signalbox/core/testing'
import { allOf, lastToolResult, lastUserMessage, neverContains } from '../shared/expect.ts'
import { PASSENGER } from '../trains/agent.ts'
import { TRAINS_ANSWER, TRAINS_PROMPT } from '../trains/script.ts'

export const PLANNER_MODEL = 'scripted-travel-planner'
export const HOTEL_MODEL = 'scripted-travel-hotel'

export const TRAVEL_PROMPT =
  'Plan my trip to Mar del Plata on Friday: the most comfortable train seat, and a hotel near the station for one night.'
export const HOTEL_TASK = 'Book one night in Mar del Plata from Friday, as close to the train station as possible.'

export const HOTEL_ANSWER =
  'Booked Hotel Costa Galana for one night from Friday (8 min from the station), ARS 96,000, confirmation H-GALANA-1N.'

export const PLAN_ANSWER =
  'Your trip is set: tourist seat 14B on train 101 to Mar del Plata on Friday at 07:10 (first class needs a manager’s approval), ' +
  'and one night at Hotel Costa Galana, 8 minutes from the station (confirmation H-GALANA-1N).'

const noRawId = neverContains(PASSENGER.dni, 'the passenger’s ID number')

export const plannerScript: ScriptStep[] = [
  {
    expect: allOf(lastUserMessage(TRAVEL_PROMPT), noRawId),
    toolCalls: [{ name: 'ask_trains', arguments: { task: TRAINS_PROMPT } }],
  },
  { expect: allOf(lastToolResult(TRAINS_ANSWER), noRawId), toolCalls: [{ name: 'ask_hotel', arguments: { task: HOTEL_TASK } }] },
  { expect: allOf(lastToolResult(HOTEL_ANSWER), noRawId), content: PLAN_ANSWER },
]

export const hotelScript: ScriptStep[] = [
  {
    expect: lastUserMessage(HOTEL_TASK),
    toolCalls: [{ name: 'find_hotels', arguments: { city: 'Mar del Plata', date: 'Friday' } }],
  },
  {
    expect: lastToolResult('Hotel Costa Galana: 8 min from the station'),
    toolCalls: [{ name: 'book_hotel', arguments: { hotel: 'Hotel Costa Galana', date: 'Friday', nights: 1 } }],
  },
  { expect: lastToolResult('confirmation H-GALANA-1N'), content: HOTEL_ANSWER },
]

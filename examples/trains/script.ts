/**
 * The trains conversation as data, for the scripted model: find the trains, try first class,
 * read the refusal, book tourist, answer. Each step checks what the agent sent before answering.
 */
import type { ScriptStep } from '@signalbox/core/testing'
import { allOf, lastToolResult, lastUserMessage, neverContains } from '../shared/expect.ts'
import { FIRST_CLASS_REASON, PASSENGER } from './agent.ts'

/** The model name the scripted server answers for. */
export const TRAINS_MODEL = 'scripted-trains'

export const TRAINS_PROMPT = 'Book me the most comfortable seat to Mar del Plata on Friday.'

export const TRAINS_ANSWER =
  'Done: you have a tourist seat on train 101 to Mar del Plata on Friday, seat 14B, leaving Constitución at 07:10 ' +
  '(ARS 21,500, confirmation T101-14B). First class needs a manager’s approval, so I booked tourist instead.'

export const trainsScript: ScriptStep[] = [
  {
    expect: lastUserMessage(TRAINS_PROMPT),
    toolCalls: [{ name: 'find_trains', arguments: { to: 'Mar del Plata', date: 'Friday' } }],
  },
  {
    expect: lastToolResult('train 101'),
    content: 'First class is the most comfortable. Booking the 07:10, train 101.',
    toolCalls: [{ name: 'book_ticket', arguments: { train: 101, seat_class: 'first' } }],
  },
  {
    // The refusal came back as the tool's result: the model changes its plan instead of retrying.
    expect: lastToolResult(FIRST_CLASS_REASON),
    content: 'First class is blocked by policy; booking tourist instead.',
    toolCalls: [{ name: 'book_ticket', arguments: { train: 101, seat_class: 'tourist' } }],
  },
  {
    expect: allOf(lastToolResult('DNI ***'), neverContains(PASSENGER.dni, 'the passenger’s ID number')),
    content: TRAINS_ANSWER,
  },
]

/**
 * The travel planner: it books nothing itself. It delegates the train to the seed's trains agent
 * (which keeps its first-class policy and its ID masking) and the room to the hotel agent, which
 * may live in another process: the planner only knows their ids.
 */

import { type AgentSystem, delegateTool } from '@signalbox/actors/system'
import { type Agent, type AgentOptions, createAgent } from '@signalbox/core'

export const PLANNER_INSTRUCTIONS =
  'You plan trips. Ask the trains agent for the train and the hotel agent for the room; then tell the person the plan in two sentences.'

export function createPlannerAgent(system: AgentSystem, options: Omit<AgentOptions, 'tools' | 'id'>): Agent {
  return createAgent({
    id: 'planner',
    instructions: PLANNER_INSTRUCTIONS,
    maxTurns: 6,
    ...options,
    tools: [
      delegateTool(system, 'trains', {
        description: 'Ask the trains agent to find and book a train seat. Give it the whole request.',
      }),
      delegateTool(system, 'hotel', {
        description: 'Ask the hotel agent to find and book a room. Say where, when and what matters.',
      }),
    ],
  })
}

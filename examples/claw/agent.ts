/**
 * The human-in-the-loop seed (level 13): an agent works a claw machine for Tina. Moving the claw
 * is free and can be undone; dropping it spends the last coin, so it waits for her yes (approve).
 * She can shout a correction at any time (steer), and the agent asks her when unsure (escalate).
 */
import { type Agent, type AgentOptions, type Answerer, askHumanTool, createAgent, type Reviewer, tool } from '@signalbox/core'
import { z } from 'zod'

export const CLAW_INSTRUCTIONS =
  'You work a claw machine for Tina. If you are not sure which prize she means, ask her before acting.'

export const PRIZES = ['teddy bear', 'polar bear', 'penguin', 'rabbit'] as const
export type Prize = (typeof PRIZES)[number]

/** The machine itself: where the claw is, coins left, what was won. Your code, in a real agent. */
export class ClawMachine {
  position: Prize | 'home' = 'home'
  coins: number
  readonly moves: Prize[] = []
  readonly drops: { over: Prize | 'home'; won: Prize | undefined }[] = []

  constructor(options: { coins?: number } = {}) {
    this.coins = options.coins ?? 1
  }

  move(to: string): string {
    const prize = PRIZES.find((p) => p === to.trim().toLowerCase())
    if (!prize) {
      throw new Error(`There is no "${to}" in the machine. Prizes: ${PRIZES.join(', ')}.`)
    }
    this.position = prize
    this.moves.push(prize)
    return `The claw is over the ${prize}. Moving again is free.`
  }

  drop(): string {
    if (this.coins <= 0) throw new Error('No coins left: the claw will not drop.')
    this.coins -= 1
    const won = this.position === 'home' ? undefined : this.position
    this.drops.push({ over: this.position, won })
    const left = `Coins left: ${this.coins}.`
    return won
      ? `The claw dropped and grabbed the ${won}! It is in the prize chute. ${left}`
      : `The claw dropped on nothing. ${left}`
  }
}

/** `move_claw` and `drop_claw` for one machine. */
export function createClawTools(machine: ClawMachine) {
  const moveClaw = tool({
    name: 'move_claw',
    description: `Move the claw over a prize (${PRIZES.join(', ')}). Free, and can be undone by moving again.`,
    schema: z.object({ to: z.string().describe('The prize to move over.') }),
    execute: async ({ to }) => machine.move(to),
  })

  const dropClaw = tool({
    name: 'drop_claw',
    description: 'Drop the claw where it is and grab the prize under it. Irreversible: it spends the last coin.',
    schema: z.object({}),
    // APPROVE: irreversible, so it waits for a person's yes before it runs.
    needsApproval: true,
    execute: async () => machine.drop(),
  })

  return { moveClaw, dropClaw }
}

export interface ClawAgentOptions extends Omit<AgentOptions, 'tools' | 'instructions' | 'reviewer'> {
  /** Decides on `drop_claw` (APPROVE). */
  reviewer: Reviewer
  /** Answers `ask_kid` (ESCALATE). */
  answerer: Answerer
  /** Default: a new machine with one coin. */
  machine?: ClawMachine
  /** How long `ask_kid` waits for Tina. Default 5 minutes. */
  questionTimeoutMs?: number
}

export function createClawAgent(options: ClawAgentOptions): Agent {
  const { answerer, machine = new ClawMachine(), questionTimeoutMs, ...agentOptions } = options
  const { moveClaw, dropClaw } = createClawTools(machine)

  // ESCALATE: a tool the model calls when it isn't sure. It waits for a person.
  const askKid = askHumanTool({
    name: 'ask_kid',
    description: 'Ask Tina when you are not sure what she wants. Waits for her answer.',
    answerer,
    ...(questionTimeoutMs === undefined ? {} : { timeoutMs: questionTimeoutMs }),
  })

  return createAgent({
    id: 'claw',
    maxTurns: 20,
    ...agentOptions,
    instructions: CLAW_INSTRUCTIONS,
    tools: [moveClaw, dropClaw, askKid],
  })
}

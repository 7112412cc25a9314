import type { Message } from './messages.ts'

/** Returned by a tool to hand the conversation over to another agent: the run ends there. */
export class Handoff {
  readonly to: string
  readonly reason: string | undefined
  readonly filter: ((messages: readonly Message[]) => Message[]) | undefined
  constructor(to: string, options: { reason?: string; filter?: (messages: readonly Message[]) => Message[] } = {}) {
    this.to = to
    this.reason = options.reason
    this.filter = options.filter
  }
}

export function handoff(
  to: string,
  options: { reason?: string; filter?: (messages: readonly Message[]) => Message[] } = {},
): Handoff {
  return new Handoff(to, options)
}

/** How a run that handed over ended: the next agent and the history it takes along. */
export interface HandoffResult {
  to: string
  reason?: string
  messages: Message[]
}

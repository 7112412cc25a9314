/**
 * The claw machine's conversations as data, one per way a person takes part: approve, deny,
 * nobody answers (timeout, denied by default), a shouted correction (steer) and a question
 * (escalate). Each names the scripted model that plays it, what the model says step by step
 * (checking what it was sent first), and what Tina does.
 */
import type { Agent, Message, ScriptedVerdict } from '@signalbox/core'
import type { Responder, ScriptStep } from '@signalbox/core/testing'
import { allOf, lastToolResult, lastUserMessage, systemPrompt } from '../shared/expect.ts'
import { CLAW_INSTRUCTIONS, PRIZES, type Prize } from './agent.ts'

export const STEERING_TEXT = 'No, wait! The penguin!'
export const DENY_REASON = 'Not yet, I want to look at it first'
export const QUESTION = 'Which bear do you mean: the teddy bear or the polar bear?'
export const ANSWER = 'The polar bear!'

export interface ClawScenario {
  /** The model name the scripted server plays this conversation for. */
  model: string
  title: string
  prompt: string
  script: ScriptStep[]
  /** Tina's decisions on `drop_claw`, in order (`'never'`: she walked away). */
  verdicts: ScriptedVerdict[]
  /** Tina's answers to `ask_kid`, in order. */
  answers: string[]
  /** Tina shouts `text` as soon as she sees the first `afterTool` call end. */
  steer?: { afterTool: string; text: string; from: string }
  /** The model's final answer. */
  answer: string
}

const start = (prompt: string) => allOf(systemPrompt(CLAW_INSTRUCTIONS), lastUserMessage(prompt))
const moveTo = (to: Prize) => ({ toolCalls: [{ name: 'move_claw', arguments: { to } }] })
const drop = { toolCalls: [{ name: 'drop_claw', arguments: {} }] }

const approve: ClawScenario = {
  model: 'claw-approve',
  title: 'approve: the drop waits for Tina’s yes',
  prompt: 'Get me the teddy bear!',
  verdicts: [true],
  answers: [],
  answer: 'Got it! The teddy bear is in the prize chute.',
  script: [
    { expect: start('Get me the teddy bear!'), ...moveTo('teddy bear') },
    { expect: lastToolResult('over the teddy bear'), ...drop },
    { expect: lastToolResult('grabbed the teddy bear'), content: 'Got it! The teddy bear is in the prize chute.' },
  ],
}

const deny: ClawScenario = {
  model: 'claw-deny',
  title: 'deny: Tina says no, the claw stays up',
  prompt: 'Get me the teddy bear!',
  verdicts: [{ approved: false, reason: DENY_REASON }],
  answers: [],
  answer: 'OK, I did not drop the claw: your coin is still in the machine. Tell me when you want me to try.',
  script: [
    { expect: start('Get me the teddy bear!'), ...moveTo('teddy bear') },
    { expect: lastToolResult('over the teddy bear'), ...drop },
    {
      expect: lastToolResult(DENY_REASON),
      content: 'OK, I did not drop the claw: your coin is still in the machine. Tell me when you want me to try.',
    },
  ],
}

const timeout: ClawScenario = {
  model: 'claw-timeout',
  title: 'timeout: nobody answers, so the drop is denied by default',
  prompt: 'Get me the teddy bear!',
  verdicts: ['never'],
  answers: [],
  answer: 'Nobody said yes in time, so I did not drop the claw: your last coin is safe.',
  script: [
    { expect: start('Get me the teddy bear!'), ...moveTo('teddy bear') },
    { expect: lastToolResult('over the teddy bear'), ...drop },
    {
      expect: lastToolResult('denied by default'),
      content: 'Nobody said yes in time, so I did not drop the claw: your last coin is safe.',
    },
  ],
}

const steer: ClawScenario = {
  model: 'claw-steer',
  title: 'steer: “No, wait! The penguin!” cancels the next call',
  prompt: 'Get me the teddy bear!',
  verdicts: [],
  answers: [],
  steer: { afterTool: 'move_claw', text: STEERING_TEXT, from: 'tina' },
  answer: 'The claw is over the penguin now. Say yes and I will drop it: it is your last coin.',
  script: [
    { expect: start('Get me the teddy bear!'), ...moveTo('teddy bear') },
    // Tina shouts while the model is thinking: this drop is cancelled before it is even reviewed.
    { expect: lastToolResult('over the teddy bear'), ...drop },
    { expect: lastToolResult(`Cancelled. The person says: ${STEERING_TEXT}`), ...moveTo('penguin') },
    {
      expect: lastToolResult('over the penguin'),
      content: 'The claw is over the penguin now. Say yes and I will drop it: it is your last coin.',
    },
  ],
}

const question: ClawScenario = {
  model: 'claw-question',
  title: 'escalate: “the bear” is ambiguous, so the model asks',
  prompt: 'Get me the bear!',
  verdicts: [true],
  answers: [ANSWER],
  answer: 'Got it! The polar bear is in the prize chute.',
  script: [
    { expect: start('Get me the bear!'), toolCalls: [{ name: 'ask_kid', arguments: { question: QUESTION } }] },
    { expect: lastToolResult(ANSWER), ...moveTo('polar bear') },
    { expect: lastToolResult('over the polar bear'), ...drop },
    { expect: lastToolResult('grabbed the polar bear'), content: 'Got it! The polar bear is in the prize chute.' },
  ],
}

export const clawScenarios = { approve, deny, timeout, steer, question } as const satisfies Record<string, ClawScenario>

/** Every scenario's script, keyed by its model name, for one scripted server. */
export const clawScripts = Object.fromEntries(Object.values(clawScenarios).map((s) => [s.model, s.script]))

/**
 * Tina watches the event stream and shouts her correction once she sees `afterTool` end. The
 * correction is queued, and the loop applies it at the next tool call. Returns an unsubscribe.
 */
export function tinaWatches(agent: Agent, steer: NonNullable<ClawScenario['steer']>): () => void {
  let shouted = false
  const off = agent.on('tool.end', (event) => {
    if (shouted || event.toolName !== steer.afterTool) return
    shouted = true
    off()
    agent.steer(steer.text, { from: steer.from })
  })
  return off
}

// --- An adaptive scripted model, for the interactive demo ---------------------------------------

export const INTERACTIVE_MODEL = 'claw-interactive'
export const INTERACTIVE_PROMPT = 'Get me the bear!'

/**
 * A tiny rule-based "model" for the interactive demo: whatever the person answers, approves or
 * shouts, it reacts sensibly, so the offline demo works without a real model.
 */
export const interactiveClaw: Responder = (request) => {
  const messages = request.messages
  const last = messages.at(-1)
  const asked = messages.filter((m) => m.role === 'assistant' && m.tool_calls?.some((c) => c.function.name === 'ask_kid')).length
  const ask = (q: string): ScriptStep =>
    asked >= 3
      ? { content: 'I am still not sure what you want, so I will stop here. Your coin is still in the machine.' }
      : { toolCalls: [{ name: 'ask_kid', arguments: { question: q } }] }

  if (!last || last.role === 'user') return ask(QUESTION)
  if (last.role !== 'tool') return { content: 'Tell me which prize you want.' }

  const name = callName(messages, last.tool_call_id)
  const text = last.content
  const prize = mentionedPrize(text)
  if (name === 'ask_kid') {
    if (text.startsWith('No answer from the person'))
      return { content: 'Tina did not answer, so I did nothing. Your coin is still in the machine.' }
    if (prize) return moveTo(prize)
    return ask(`Sorry, which prize: ${PRIZES.join(', ')}?`)
  }
  if (name === 'move_claw') return text.startsWith('The claw is over') ? drop : ask(`Which prize: ${PRIZES.join(', ')}?`)
  if (name === 'drop_claw') {
    const won = /grabbed the ([a-z ]+)!/.exec(text)?.[1]
    if (won) return { content: `Got it! The ${won} is in the prize chute.` }
    if (text.startsWith('Cancelled. The person says:')) return prize ? moveTo(prize) : ask('What should I do instead?')
    if (text.includes('denied by default'))
      return { content: 'Nobody said yes in time, so I did not drop the claw: your last coin is safe.' }
    if (prize) return moveTo(prize) // "Denied: the penguin!"
    return ask('You said no to dropping the claw. What should I do?')
  }
  return { content: 'Something went wrong; I stopped.' }
}

function callName(messages: Message[], callId: string): string | undefined {
  for (const m of messages) {
    if (m.role !== 'assistant') continue
    const call = m.tool_calls?.find((c) => c.id === callId)
    if (call) return call.function.name
  }
  return undefined
}

function mentionedPrize(text: string): Prize | undefined {
  const lower = text.toLowerCase()
  const exact = PRIZES.find((p) => lower.includes(p))
  if (exact) return exact
  if (lower.includes('teddy')) return 'teddy bear'
  if (lower.includes('polar') || lower.includes('white')) return 'polar bear'
  return undefined
}

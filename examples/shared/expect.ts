/**
 * Small checks for scripted steps (`expect`): the scripted model answers only when the agent sent
 * what the conversation expects, and fails loudly otherwise.
 */
import type { RequestExpectation } from '@signalbox/core/testing'

const show = (value: unknown) => {
  const text = JSON.stringify(value) ?? String(value)
  return text.length > 200 ? `${text.slice(0, 200)}…` : text
}

/** The last message is the user's prompt. */
export function lastUserMessage(text: string): RequestExpectation {
  return (request) => {
    const last = request.messages.at(-1)
    return last?.role === 'user' && last.content === text ? true : `expected the user's prompt last, got ${show(last)}`
  }
}

/** The first message is the system prompt. */
export function systemPrompt(text: string): RequestExpectation {
  return (request) => {
    const first = request.messages[0]
    return first?.role === 'system' && first.content === text ? true : `expected the system prompt first, got ${show(first)}`
  }
}

/** The last message is a tool result containing `text`. */
export function lastToolResult(text: string): RequestExpectation {
  return (request) => {
    const last = request.messages.at(-1)
    return last?.role === 'tool' && last.content.includes(text)
      ? true
      : `expected a tool result containing ${show(text)} last, got ${show(last)}`
  }
}

/** Nothing in the request (messages, tools, options) contains `secret`; the secret is not echoed. */
export function neverContains(secret: string, what: string): RequestExpectation {
  return (request) => (JSON.stringify(request.body).includes(secret) ? `${what} reached the model` : true)
}

/** Every check passes. */
export function allOf(...checks: RequestExpectation[]): RequestExpectation {
  return (request) => {
    for (const check of checks) {
      const verdict = check(request)
      if (verdict !== true) return verdict
    }
    return true
  }
}

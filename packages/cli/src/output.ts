/** Colours and the one-line renderings of events, ids and times shared by the commands. */
import type { AgentEvent, RunStatus } from '@signalbox/core'
import { formatDuration } from '@signalbox/core/internal'
import pc from 'picocolors'

export type Colors = ReturnType<typeof pc.createColors>

/** Colours on a terminal only; never with `NO_COLOR`; `FORCE_COLOR` forces them (e.g. through a pipe). */
export function colorsEnabled(env: NodeJS.ProcessEnv, stream: { isTTY?: boolean }): boolean {
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false
  if (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== '' && env.FORCE_COLOR !== '0') return true
  return Boolean(stream.isTTY) && env.TERM !== 'dumb'
}

export function createColorizer(enabled: boolean): Colors {
  return pc.createColors(enabled)
}

/** `14:03:07.412` (local time). */
export function clockTime(ms: number): string {
  const d = new Date(ms)
  const pad = (n: number, w = 2) => String(n).padStart(w, '0')
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`
}

/** `2025-11-29 14:03:07` (local time). */
export function dateTime(ms: number): string {
  const d = new Date(ms)
  const pad = (n: number) => String(n).padStart(2, '0')
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`
}

/** `run_3f2a9c1e` from `run_3f2a9c1e-....`: enough to tell runs apart on one screen. */
export function shortId(id: string): string {
  const uuid = /^([a-z]+)_([0-9a-f]{8})-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.exec(id)
  if (uuid) return `${uuid[1]}_${uuid[2]}`
  return id.length > 16 ? `${id.slice(0, 15)}…` : id
}

/** JSON on one line, cut to `max` characters. */
export function compactJson(value: unknown, max = 160): string {
  let text: string
  try {
    text = JSON.stringify(value) ?? String(value)
  } catch {
    text = String(value)
  }
  return text.length > max ? `${text.slice(0, max - 1)}…` : text
}

/** A string quoted on one line, cut to `max` characters. */
export function quote(text: string, max = 120): string {
  const flat = JSON.stringify(text)
  return flat.length > max ? `${flat.slice(0, max - 2)}…"` : flat
}

/** A measured time on a terminal line: `12 ms`, `1.5 s`, `1 min 5 s`. */
export const formatElapsed = (ms: number): string => formatDuration(ms, 'elapsed')

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`

/**
 * The key fields of one event, on one line (without time, agent and run). `undefined` for
 * events not worth a line of their own (`text.delta`: the watcher coalesces them).
 */
/** How a finished run's status is colored: green done, yellow cancelled, red failed. */
export function statusColor(status: RunStatus, c: Colors): (s: string) => string {
  return status === 'done' ? c.green : status === 'cancelled' ? c.yellow : c.red
}

/** How a run that handed the conversation over says so: `handed off to <agent> (<reason>)`. */
export function handedOff(handoff: { to: string; reason?: string }, c: Colors): string {
  return `handed off to ${c.magenta(handoff.to)}${handoff.reason ? c.dim(` (${quote(handoff.reason, 60)})`) : ''}`
}

export function describeEvent(event: AgentEvent, c: Colors): { label: string; color: (s: string) => string; detail: string } {
  switch (event.type) {
    case 'run.start':
      return { label: event.type, color: c.bold, detail: quote(event.input) }
    case 'run.end': {
      const color = statusColor(event.status, c)
      const parts = [color(event.status), plural(event.turns, 'turn'), `${event.usage.totalTokens} tokens`]
      if (event.handoff) parts.push(handedOff(event.handoff, c))
      if (event.error) parts.push(`${event.error.code}: ${event.error.message}`)
      return { label: event.type, color, detail: parts.join(' · ') }
    }
    case 'run.error':
      return { label: event.type, color: c.red, detail: `${event.error.code}: ${event.error.message}` }
    case 'turn.start':
      return { label: event.type, color: c.blue, detail: `turn ${event.turn}` }
    case 'turn.end':
      return { label: event.type, color: c.blue, detail: `turn ${event.turn} · ${plural(event.toolCalls, 'tool call')}` }
    case 'model.request': {
      const attempt = event.attempt > 1 ? ` · attempt ${event.attempt}` : ''
      return {
        label: event.type,
        color: c.blue,
        detail: `turn ${event.turn}${attempt} · ${plural(event.messages.length, 'message')} · tools: ${event.tools.join(', ') || 'none'}`,
      }
    }
    case 'model.response': {
      const calls = (event.message.tool_calls ?? []).map((call) => `${call.function.name}(${call.function.arguments})`)
      const parts = [event.finishReason]
      if (event.message.content) parts.push(quote(event.message.content, 90))
      if (calls.length > 0) parts.push(`→ ${calls.join(', ')}`)
      parts.push(formatElapsed(event.durationMs))
      return { label: event.type, color: c.blue, detail: parts.join(' · ') }
    }
    case 'model.retry':
      return {
        label: event.type,
        color: c.yellow,
        detail: `attempt ${event.attempt} failed (${event.error.code}), retry in ${formatElapsed(event.delayMs)}`,
      }
    case 'text.delta':
      return { label: 'text', color: c.dim, detail: quote(event.delta) }
    case 'tool.start':
      return {
        label: event.type,
        color: c.green,
        detail: `${event.toolName}(${compactJson(event.arguments)}) ${c.dim(event.callId)}`,
      }
    case 'tool.end': {
      const ok = event.outcome === 'executed' || event.outcome === 'responded'
      const color = ok ? c.green : event.outcome === 'steered' ? c.yellow : c.red
      return {
        label: event.type,
        color,
        detail: `${event.toolName} · ${color(event.outcome)} · ${formatElapsed(event.durationMs)} · ${quote(event.output, 100)}`,
      }
    }
    case 'approval.requested': {
      const { request } = event
      return {
        label: event.type,
        color: c.yellow,
        detail: `${request.toolName}(${compactJson(request.arguments)}) · ${request.callId} · ${Math.round((request.deadline - request.requestedAt) / 1000)}s to decide`,
      }
    }
    case 'approval.decided': {
      const { decision } = event
      const verdict = decision.approved ? c.green('approved') : c.red('denied')
      return {
        label: event.type,
        color: c.yellow,
        detail: `${event.request.toolName} ${verdict} by ${decision.reviewer}${decision.reason ? ` · ${quote(decision.reason)}` : ''} · ${formatElapsed(event.latencyMs)}`,
      }
    }
    case 'approval.timeout':
      return {
        label: event.type,
        color: c.red,
        detail: `${event.request.toolName}: nobody decided by the deadline, denied by default`,
      }
    case 'approval.rejected':
      return { label: event.type, color: c.red, detail: event.reason }
    case 'steering.queued':
      return { label: event.type, color: c.yellow, detail: `${quote(event.text)} from ${event.from}` }
    case 'steering.applied':
      return {
        label: event.type,
        color: c.yellow,
        detail: `cancels ${event.toolName} ${c.dim(event.callId)}: ${quote(event.text)}`,
      }
    case 'question.asked':
      return { label: event.type, color: c.yellow, detail: quote(event.question.question) }
    case 'question.answered':
      return {
        label: event.type,
        color: c.yellow,
        detail: `${quote(event.answer)} by ${event.answeredBy} · ${formatElapsed(event.latencyMs)}`,
      }
    case 'question.timeout':
      return { label: event.type, color: c.red, detail: `no answer to ${quote(event.question.question)}` }
    default: {
      const unknown = event as { type: string }
      return { label: unknown.type, color: c.dim, detail: '' }
    }
  }
}

/** `time agent run type detail`: one event on one line. */
export function eventLine(
  event: AgentEvent,
  c: Colors,
  options: { agent?: boolean; run?: boolean; detail?: string } = {},
): string {
  const { label, color, detail } = describeEvent(event, c)
  const who = options.agent === false ? '' : `${c.magenta(event.agentId)} `
  const run = options.run === false ? '' : `${c.dim(shortId(event.runId))} `
  return `${c.dim(clockTime(event.at))} ${who}${run}${color(label.padEnd(18))} ${options.detail ?? detail}`
}

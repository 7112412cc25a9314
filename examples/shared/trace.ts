/**
 * A readable, coloured trace of one agent run for the demos: the machine's states (from the run's
 * actor), your hooks' decisions (by wrapping them) and the agent's events (observe only).
 */
import type { Agent, AgentEvent, BeforeToolExecutionResult, Hooks, RunFailedError, RunHandle, RunResult } from '@signalbox/core'
import pc from 'picocolors'

type Colors = ReturnType<typeof pc.createColors>

/** Colours only on a terminal, never with `NO_COLOR`; `FORCE_COLOR` forces them (e.g. piped into `less -R`). */
export function colorsEnabled(env: NodeJS.ProcessEnv = process.env, stream: { isTTY?: boolean } = process.stdout): boolean {
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false
  if (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== '' && env.FORCE_COLOR !== '0') return true
  return Boolean(stream.isTTY) && env.TERM !== 'dumb'
}

export interface TraceOptions {
  /** Where lines go. Default: stdout. */
  write?: (line: string) => void
  /** Default: `colorsEnabled()`. */
  colors?: boolean
}

export interface TraceStats {
  modelCalls: number
  toolCalls: number
  outcomes: Record<string, number>
}

export interface Trace {
  readonly c: Colors
  readonly stats: TraceStats
  /** Prints a line as is. */
  line(text?: string): void
  /** Prints the agent's events. Returns an unsubscribe function. */
  events(agent: Agent): () => void
  /** Prints the run's state path each time it changes (subscribes to the run's actor). */
  states(handle: RunHandle): () => void
  /** Wraps hook sets so each decision is printed; the hooks themselves are unchanged. */
  hooks(hooks: Hooks | Hooks[]): Hooks[]
  /** The final answer and a one-line summary. */
  result(result: RunResult, startedAt: number): void
  /** A failed or cancelled run. */
  failure(error: unknown): void
}

const LABEL = 20

export function createTrace(options: TraceOptions = {}): Trace {
  const c = pc.createColors(options.colors ?? colorsEnabled())
  const write = options.write ?? ((line: string) => process.stdout.write(`${line}\n`))
  const stats: TraceStats = { modelCalls: 0, toolCalls: 0, outcomes: {} }

  // `undefined`, not `void`: the event switch below returns what these return.
  const row = (label: string, color: (s: string) => string, detail: string): undefined => {
    write(`  ${color(label.padEnd(LABEL))}${detail}`)
  }
  const body = (text: string, color: (s: string) => string = c.dim): undefined => {
    const lines = text.split('\n')
    const shown = lines.slice(0, 6)
    if (lines.length > shown.length) shown.push(`… ${lines.length - shown.length} more line(s)`)
    for (const l of shown) write(`  ${' '.repeat(LABEL)}${c.dim('│')} ${color(l)}`)
  }

  const outcomeColor = (outcome: string) => {
    if (outcome === 'executed' || outcome === 'responded') return c.green
    if (outcome === 'steered') return c.yellow
    return c.red
  }

  function onEvent(event: AgentEvent): undefined {
    switch (event.type) {
      case 'run.start':
        return row('run.start', c.bold, `${c.dim(event.runId)} ${quote(event.input)}`)
      case 'turn.start':
        return row('turn.start', c.blue, `turn ${event.turn}`)
      case 'model.request': {
        stats.modelCalls++
        const last = event.messages.at(-1)
        const lastText = last ? (last.role === 'tool' ? `tool result for ${last.tool_call_id}` : last.role) : 'nothing'
        const attempt = event.attempt > 1 ? ` · attempt ${event.attempt}` : ''
        return row(
          'model.request',
          c.blue,
          `turn ${event.turn}${attempt} · ${plural(event.messages.length, 'message')}, last: ${lastText} · tools: ${event.tools.join(', ') || 'none'}`,
        )
      }
      case 'model.response': {
        const calls = (event.message.tool_calls ?? []).map((call) => `${call.function.name}(${call.function.arguments})`)
        const parts = [event.finishReason]
        if (event.message.content) parts.push(quote(event.message.content, 90))
        if (calls.length > 0) parts.push(`→ ${calls.join(', ')}`)
        if (event.usage) parts.push(`${event.usage.totalTokens} tokens`)
        parts.push(`${event.durationMs} ms`)
        return row('model.response', c.blue, parts.join(' · '))
      }
      case 'model.retry':
        return row(
          'model.retry',
          c.yellow,
          `attempt ${event.attempt} failed (${event.error.code}): retrying in ${event.delayMs} ms`,
        )
      case 'text.delta':
        return
      case 'tool.start':
        return row('tool.start', c.green, `${event.toolName}(${JSON.stringify(event.arguments)}) ${c.dim(event.callId)}`)
      case 'tool.end': {
        stats.toolCalls++
        stats.outcomes[event.outcome] = (stats.outcomes[event.outcome] ?? 0) + 1
        const color = outcomeColor(event.outcome)
        row(
          'tool.end',
          color,
          `${event.toolName} · ${color(event.outcome)}${event.isError ? ' (error result)' : ''} · ${event.durationMs} ms`,
        )
        return body(event.output, event.isError ? c.red : c.dim)
      }
      case 'turn.end':
        return row('turn.end', c.blue, `turn ${event.turn} · ${plural(event.toolCalls, 'tool call')}`)
      case 'approval.requested': {
        const { request } = event
        const seconds = Math.round((request.deadline - request.requestedAt) / 1000)
        return row(
          'approval.requested',
          c.yellow,
          `${request.toolName}(${JSON.stringify(request.arguments)}) · ${request.callId} · ${request.digest.slice(0, 19)}… · ${seconds}s to decide`,
        )
      }
      case 'approval.decided': {
        const { decision } = event
        const verdict = decision.approved ? c.green('approved') : c.red('denied')
        const why = decision.reason ? ` · ${quote(decision.reason)}` : ''
        return row('approval.decided', c.yellow, `${verdict} by ${decision.reviewer}${why} · ${event.latencyMs} ms`)
      }
      case 'approval.timeout':
        return row('approval.timeout', c.red, `nobody decided on ${event.request.toolName} by the deadline: denied by default`)
      case 'approval.rejected':
        return row('approval.rejected', c.red, event.reason)
      case 'steering.queued':
        return row('steering.queued', c.yellow, `${quote(event.text)} from ${event.from}`)
      case 'steering.applied':
        return row('steering.applied', c.yellow, `cancels ${event.toolName} ${c.dim(event.callId)}: ${quote(event.text)}`)
      case 'question.asked':
        return row('question.asked', c.yellow, quote(event.question.question))
      case 'question.answered':
        return row('question.answered', c.yellow, `${quote(event.answer)} by ${event.answeredBy} · ${event.latencyMs} ms`)
      case 'question.timeout':
        return row('question.timeout', c.red, `no answer to ${quote(event.question.question)}`)
      case 'run.error':
        return row('run.error', c.red, `${event.error.code}: ${event.error.message}`)
      case 'run.end': {
        const color = event.status === 'done' ? c.green : c.red
        return row(
          'run.end',
          color,
          `${color(event.status)} · ${plural(event.turns, 'turn')} · ${event.usage.totalTokens} tokens`,
        )
      }
      default:
        return row((event as AgentEvent).type, c.dim, '')
    }
  }

  function hookRow(name: string, point: string, subject: string, decision: string) {
    write(
      `  ${c.magenta('hook'.padEnd(LABEL))}${c.magenta(name)} ${c.dim(`@ ${point}`)}${subject ? ` ${subject}` : ''} → ${decision}`,
    )
  }

  function wrap(set: Hooks): Hooks {
    const out: Hooks = {}
    const { beforeTurn, beforeProviderCall, beforeToolExecution, afterToolExecution, afterTurn } = set
    if (beforeTurn) {
      out.beforeTurn = async (context) => {
        const result = await beforeTurn(context)
        hookRow(beforeTurn.name, 'beforeTurn', `turn ${context.turn}`, result ? c.red(`stop: ${result.reason}`) : 'go on')
        return result
      }
    }
    if (beforeProviderCall) {
      out.beforeProviderCall = async (context) => {
        const result = await beforeProviderCall(context)
        hookRow(
          beforeProviderCall.name,
          'beforeProviderCall',
          `turn ${context.turn}`,
          result ? 'changed what is sent' : 'sends as is',
        )
        return result
      }
    }
    if (beforeToolExecution) {
      out.beforeToolExecution = async (context) => {
        const result = await beforeToolExecution(context)
        const subject = `${context.toolName}(${JSON.stringify(context.input)})`
        hookRow(beforeToolExecution.name, 'beforeToolExecution', subject, describeGate(result ?? undefined, c))
        return result
      }
    }
    if (afterToolExecution) {
      out.afterToolExecution = async (context) => {
        const result = await afterToolExecution(context)
        const rewritten = typeof result === 'string' ? result : result ? result.output : undefined
        const changed = rewritten !== undefined && rewritten !== context.output
        hookRow(
          afterToolExecution.name,
          'afterToolExecution',
          context.toolName,
          changed ? c.green('rewrote what the model reads:') : 'kept the output',
        )
        if (changed) body(rewritten, c.green)
        return result
      }
    }
    if (afterTurn) {
      out.afterTurn = async (context) => {
        await afterTurn(context)
        hookRow(afterTurn.name, 'afterTurn', `turn ${context.turn}`, 'done')
      }
    }
    return out
  }

  return {
    c,
    stats,
    line: (text = '') => write(text),
    events: (agent) => agent.on('*', onEvent),
    states(handle) {
      let last = ''
      const show = (snapshot: ReturnType<RunHandle['actor']['getSnapshot']>) => {
        const path = statePath(snapshot.value)
        // The same state again for another turn or another call is a new visit: show it.
        const key = `${path}#${snapshot.context.turn}#${snapshot.context.callIndex}`
        if (key === last) return
        last = key
        const tags = [...snapshot.tags]
        write(
          `  ${c.cyan('state'.padEnd(LABEL))}${c.cyan(c.bold(path))}${tags.length > 0 ? c.dim(`  [${tags.join(', ')}]`) : ''}`,
        )
      }
      // The run started in `agent.start()`: show where it is now, then every change.
      show(handle.actor.getSnapshot())
      const subscription = handle.actor.subscribe({ next: show, error: () => {} })
      return () => subscription.unsubscribe()
    },
    hooks: (hooks) => (Array.isArray(hooks) ? hooks : [hooks]).map(wrap),
    result(result, startedAt) {
      const { outcomes } = stats
      const byOutcome = Object.entries(outcomes)
        .map(([outcome, n]) => `${n} ${outcome}`)
        .join(', ')
      write('')
      write(c.bold('Final answer'))
      for (const line of result.output.split('\n')) write(`  ${line}`)
      write('')
      const u = result.usage
      write(
        `${c.green('✔')} ${c.bold(result.status)} · ${result.turns} turns · ${stats.modelCalls} model calls · ` +
          `${stats.toolCalls} tool calls${byOutcome ? ` (${byOutcome})` : ''} · ` +
          `${u.totalTokens} tokens (${u.promptTokens} prompt + ${u.completionTokens} completion) · ${Date.now() - startedAt} ms`,
      )
    },
    failure(error) {
      const result = (error as Partial<RunFailedError>).result
      write('')
      if (result) {
        write(
          `${c.red('✘')} ${c.bold(result.status)} after ${result.turns} turn(s): ${result.error?.message ?? 'no reason given'}`,
        )
      } else {
        write(`${c.red('✘')} ${error instanceof Error ? error.message : String(error)}`)
      }
    },
  }
}

/** `running.turn.toolCalls.executingTool` from `{ running: { turn: { toolCalls: 'executingTool' } } }`. */
export function statePath(value: unknown): string {
  if (typeof value === 'string') return value
  if (value && typeof value === 'object') {
    return Object.entries(value as Record<string, unknown>)
      .map(([key, child]) => {
        const rest = statePath(child)
        return rest ? `${key}.${rest}` : key
      })
      .join(' | ')
  }
  return ''
}

function describeGate(result: BeforeToolExecutionResult, c: Colors): string {
  if (result === undefined || result === null) return c.green('allow')
  if ('action' in result) {
    if (result.action === 'allow') return c.green('allow')
    if (result.action === 'deny') return `${c.red('deny')} ${quote(result.reason)}`
    return `${c.yellow('respond')} ${quote(result.result)}`
  }
  if (!result.authorize) return `${c.red('deny')} ${quote(result.mockResult ?? 'Rejected by policy.')}`
  return result.mockResult === undefined ? c.green('allow') : `${c.yellow('respond')} ${quote(result.mockResult)}`
}

/** A demo piped into `head` should stop quietly, not crash on EPIPE. */
export function exitQuietlyOnBrokenPipe(): void {
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(0)
    throw error
  })
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`

function quote(text: string, max = 140): string {
  const flat = JSON.stringify(text)
  return flat.length > max ? `${flat.slice(0, max - 2)}…"` : flat
}

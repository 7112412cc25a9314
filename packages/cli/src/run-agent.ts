/** The implementation of `signalbox run` (loaded only when the command runs). */

import {
  busAuditLog,
  connectAgent,
  discoverTools,
  type RemoteAnswerer,
  type RemoteReviewer,
  remoteAnswerer,
  remoteReviewer,
} from '@signalbox/actors'
import { createEvidenceBook, signedAuditLog } from '@signalbox/actors/trust'
import {
  type AgentEvent,
  type Answerer,
  type AuditEntry,
  type AuditLog,
  askHumanTool,
  ConfigError,
  createAgent,
  functionAnswerer,
  MemoryAuditLog,
  OpenAIProvider,
  policyReviewer,
  type Reviewer,
  RunFailedError,
  type RunResult,
  type Tool,
} from '@signalbox/core'
import {
  type Bus,
  BusNoRespondersError,
  BusTimeoutError,
  createInProcessBus,
  createSubjects,
  type Subjects,
} from '@signalbox/core/bus'
import { statePath } from '@signalbox/core/internal'
import { type ScriptedModelServer, startScriptedModelServer } from '@signalbox/core/testing'
import type { AgentModuleContext } from './agent-module.ts'
import { openBus, untilSignal } from './bus.ts'
import { CliError, type CommandContext, EXIT, NO_BUS_MESSAGE, UsageError } from './cli.ts'
import { parseMs } from './commands/status.ts'
import { whoIsAt } from './identity.ts'
import { loadAgentModule } from './load-module.ts'
import { type Colors, eventLine, formatElapsed, quote } from './output.ts'
import { createPrompter, type Prompter } from './prompter.ts'
import { type AutoVerdict, createReviewConsole } from './review-console.ts'
import { commandTracing } from './tracing.ts'
import { agentTrustFrom, trustLine } from './trust-flags.ts'

const NO_REVIEWER_REASON =
  'Denied: nobody can review this call (signalbox run has no terminal and no --nats bus with reviewers). Do not retry it; say what you wanted to do.'
const NO_ANSWER_TEXT = 'Nobody can answer: signalbox run has no terminal and no --nats bus. Do not guess: say what you need.'

export async function runAgent(context: CommandContext): Promise<number> {
  const { c, io } = context
  const [spec, ...words] = context.positionals as [string, ...string[]]
  const { agent: def } = await loadAgentModule(
    spec,
    io.cwd,
    context.global.nats ? [import('@signalbox/actors'), import('@signalbox/actors/nats'), import('@signalbox/core/bus')] : [],
  )
  const input = words.join(' ').trim() || def.input
  if (!input)
    throw new UsageError(
      `no input: give it after the module (signalbox run ${spec} "your message"), or set \`input\` in the module`,
      context.command,
    )
  const auto = context.values.auto as AutoVerdict | undefined
  const autoAnswer = context.values.answer as string | undefined
  const mode = context.global.nats ? 'nats' : 'embedded'
  if (mode === 'nats' && (auto || autoAnswer !== undefined)) {
    throw new UsageError(
      '--auto and --answer are for embedded runs; with --nats, run `signalbox review --auto ...` next to the agent',
      context.command,
    )
  }
  if (mode === 'embedded' && def.remoteTools && def.remoteTools.length > 0) {
    throw new CliError('NO_BUS', `${spec} uses remote tools (${def.remoteTools.join(', ')}): ${NO_BUS_MESSAGE}`)
  }
  // Read (and refused when bad) before anything connects.
  const { trust, signer, trustFile } = await agentTrustFrom(context)
  const approvalTimeoutMs = parseMs(context.values['approval-timeout'], def.approvalTimeoutMs ?? 5 * 60_000)
  const waitToolsMs = parseMs(context.values['wait-tools'], 10_000)

  const cleanups: (() => unknown)[] = []
  const cleanup = async () => {
    for (const fn of cleanups.reverse()) {
      try {
        await fn()
      } catch {
        // best effort
      }
    }
  }
  try {
    // Tracing first, so its flush is the last cleanup (after the run's spans have ended).
    const tracing = await commandTracing(context, `signalbox-${def.id}`)
    if (tracing) cleanups.push(() => tracing.shutdown())
    // The model endpoint.
    let server: ScriptedModelServer | undefined
    let model = context.values.model as string | undefined
    let baseURL = context.values['base-url'] as string | undefined
    let apiKey = context.values['api-key'] as string | undefined
    if (context.values.scripted) {
      if (!def.script)
        throw new CliError(
          'NO_SCRIPT',
          `${spec} has no scripted conversation: add \`script: { "<model>": [steps...] }\` to it, or drop --scripted`,
        )
      model ??= def.model ?? Object.keys(def.script).find((k) => k !== '*') ?? 'scripted'
      const script = def.script[model] ?? def.script['*']
      if (!script)
        throw new CliError(
          'NO_SCRIPT',
          `${spec} has no script for model "${model}" (scripts: ${Object.keys(def.script).join(', ')})`,
        )
      // Only the conversation played here: the run is checked against it alone at the end.
      server = await startScriptedModelServer({ scripts: { [model]: script } })
      const started = server
      cleanups.push(() => started.close())
      baseURL = server.url
      apiKey = 'scripted'
    }
    let provider: OpenAIProvider
    try {
      provider = new OpenAIProvider({
        ...(baseURL ? { baseURL } : {}),
        ...(apiKey ? { apiKey } : {}),
        ...(model ? { model } : {}),
      })
    } catch (error) {
      if (ConfigError.is(error))
        throw new CliError(
          'NO_MODEL',
          "no model: pass --model <name> (or set SIGNALBOX_MODEL), or --scripted to play the module's script offline",
        )
      throw error
    }

    // Where the reviewer, answerer, audit and remote tools live.
    let bus: Bus
    let subjects: Subjects
    let where: string
    let reviewer: Reviewer
    let answerer: Answerer
    let audit: MemoryAuditLog | AuditLog
    const evidence = createEvidenceBook()
    let prompter: Prompter | undefined
    let remote: Tool<unknown>[] = []
    const interrupt = () => process.kill(process.pid, 'SIGINT')
    const print = (text: string) => (prompter ? prompter.print(text) : context.out(text))
    const json = (record: unknown) => context.out(JSON.stringify(record))

    if (mode === 'nats') {
      const opened = await openBus(context, `run-${def.id}`)
      bus = tracing ? tracing.bus(opened.bus) : opened.bus
      subjects = opened.subjects
      cleanups.push(() => opened.bus.close())
      where = `${opened.url} · prefix ${subjects.prefix}`
      // With a signing key the audit is signed and carries the signed decisions it records.
      audit = signer ? signedAuditLog({ log: busAuditLog({ bus, subjects }), signer, evidence }) : busAuditLog({ bus, subjects })
      const signed = { ...(trust ? { trust } : {}), ...(signer ? { signer } : {}), evidence }
      const busReviewer: RemoteReviewer = remoteReviewer({ bus, subjects, audit, ...signed })
      const busAnswerer: RemoteAnswerer = remoteAnswerer({ bus, subjects, ...signed })
      cleanups.push(
        () => busReviewer.close(),
        () => busAnswerer.close(),
      )
      reviewer = busReviewer
      answerer = busAnswerer
      if (def.remoteTools && def.remoteTools.length > 0) {
        remote = await findRemoteTools(bus, subjects, def.remoteTools, waitToolsMs, () =>
          context.err(
            c.dim(
              `waiting up to ${formatElapsed(waitToolsMs)} for a tool host serving ${def.remoteTools?.join(', ')} (signalbox tools serve <module> --prefix ${subjects.prefix})...`,
            ),
          ),
        )
      }
    } else {
      bus = createInProcessBus()
      subjects = createSubjects(context.global.prefix)
      cleanups.push(() => bus.close())
      const terminal = Boolean(io.stdin.isTTY && io.stdout.isTTY)
      if (terminal && (!auto || autoAnswer === undefined)) {
        prompter = createPrompter({ input: io.stdin, output: io.stdout, onInterrupt: interrupt })
        const opened = prompter
        cleanups.push(() => opened.close())
      }
      const ui = createReviewConsole({
        c,
        out: { line: print, ...(context.global.json ? { json } : {}) },
        // A person deciding at this terminal needs a name for the audit.
        name: auto ? `auto-${auto}` : prompter ? whoIsAt(context) : 'auto-answer',
        ...(prompter ? { prompter } : {}),
        ...(auto ? { auto } : {}),
        ...(autoAnswer !== undefined ? { autoAnswer } : {}),
      })
      reviewer =
        auto || prompter
          ? ui.reviewer
          : policyReviewer(() => ({ approved: false, reason: NO_REVIEWER_REASON }), { name: 'no-reviewer' })
      answerer =
        autoAnswer !== undefined || prompter ? ui.answerer : functionAnswerer(() => NO_ANSWER_TEXT, { name: 'no-answerer' })
      audit = new MemoryAuditLog()
      where = `embedded (in-process bus) · approvals: ${auto ? `auto ${auto}` : prompter ? 'asked here' : 'denied (no terminal)'}`
    }

    // The agent.
    const moduleContext: AgentModuleContext = { mode, bus, subjects, answerer }
    const local = typeof def.tools === 'function' ? await def.tools(moduleContext) : (def.tools ?? [])
    const tools: Tool<any>[] = [...local, ...remote]
    if (def.askHuman) tools.push(askHumanTool({ answerer, ...(def.askHuman === true ? {} : def.askHuman) }))
    const inspection = await (await import('./commands/inspect.ts')).startRunInspection(context, { mode, bus, subjects })
    cleanups.push(() => inspection.stop())
    const agent = createAgent({
      id: def.id,
      provider,
      tools,
      ...(inspection.inspect ? { inspect: inspection.inspect } : {}),
      instructions: def.instructions,
      reviewer,
      audit,
      approvalTimeoutMs,
      ...(def.hooks ? { hooks: def.hooks } : {}),
      ...(def.maxTurns ? { maxTurns: def.maxTurns } : {}),
      onInternalError: (error, at) =>
        context.err(`${c.yellow('warning')}: ${at}: ${error instanceof Error ? error.message : String(error)}`),
    })
    tracing?.agent(agent)
    // Steering and cancels: only signed by the policy's `steerers` / `controllers`, when it has one.
    const connection = connectAgent(agent, { bus, subjects, ...(trust ? { trust, evidence } : {}) })
    cleanups.push(() => connection.close())
    await connection.ready

    if (!context.global.json) {
      const remoteNames = new Set(remote.map((t) => t.name))
      const toolList = tools
        .map((t) => {
          const notes = [remoteNames.has(t.name) ? 'remote' : '', t.needsApproval ? 'needs approval' : ''].filter(Boolean)
          return `${t.name}${notes.length > 0 ? c.dim(` (${notes.join(', ')})`) : ''}`
        })
        .join(', ')
      print('')
      print(`${c.bold(`signalbox run · ${def.id}`)} ${c.dim(spec)}`)
      print(`${c.dim('model ')} ${provider.model} at ${provider.baseURL}${server ? c.dim(' (scripted, offline)') : ''}`)
      print(`${c.dim('bus   ')} ${where}`)
      print(`${c.dim('tools ')} ${toolList || 'none'}`)
      if (trust || signer) print(`${c.dim('trust ')} ${trustLine(trust, trustFile, signer)}`)
      print(`${c.dim('input ')} ${quote(input, 200)}`)
      print('')
    }
    const trace = traceRun(c, mode, subjects, context.global.json ? json : print, context.global.json)
    agent.on('*', trace.onEvent)

    // The run.
    const startedAt = Date.now()
    const runId = context.values['run-id'] as string | undefined
    const handle = agent.start(input, runId ? { runId } : {})
    const states = handle.actor.subscribe({
      next: (snapshot) => trace.onState(handle.runId, statePath(snapshot.value)),
      error: () => {},
    })
    trace.onState(handle.runId, statePath(handle.actor.getSnapshot().value))
    cleanups.push(() => states.unsubscribe())

    let interrupts = 0
    const onSignal = (signal: NodeJS.Signals) => {
      interrupts++
      if (interrupts > 1) process.exit(EXIT.cancelled)
      context.err(c.yellow(`${signal}: cancelling the run (again to exit now)`))
      handle.cancel(signal === 'SIGINT' ? 'interrupted (Ctrl-C)' : `stopped (${signal})`)
    }
    const onAbort = () => handle.cancel('aborted by the caller')
    process.on('SIGINT', onSignal)
    process.on('SIGTERM', onSignal)
    if (io.signal?.aborted) onAbort()
    else io.signal?.addEventListener('abort', onAbort, { once: true })
    cleanups.push(() => {
      process.off('SIGINT', onSignal)
      process.off('SIGTERM', onSignal)
      io.signal?.removeEventListener('abort', onAbort)
    })

    let result: RunResult
    try {
      result = await handle.result
    } catch (error) {
      if (!RunFailedError.is(error)) throw error
      result = error.result
    }

    // The end.
    let scriptProblem: string | undefined
    if (server && result.status !== 'cancelled') {
      try {
        server.assertDone()
      } catch (error) {
        scriptProblem = error instanceof Error ? error.message : String(error)
      }
    }
    if (context.global.json) {
      json({ type: 'result', ...result, durationMs: Date.now() - startedAt, ...(scriptProblem ? { scriptProblem } : {}) })
    } else {
      printResult(print, c, result, Date.now() - startedAt)
      if (audit instanceof MemoryAuditLog && audit.entries.length > 0) printAudit(print, c, audit.entries)
      if (scriptProblem) print(`${c.red('✘')} ${scriptProblem}`)
    }
    if (inspection.pageUrl) {
      // The inspector page lives in this process: it stays up, showing the finished run, until the
      // person stops it (whether or not the output is a terminal: --inspect asked for the page).
      const say = context.global.json ? context.err : print
      say(c.dim(`the run ended (${result.status}); the inspector page stays up at ${inspection.pageUrl}: Ctrl-C to stop`))
      const waiting = untilSignal(io.signal)
      await waiting.promise
      waiting.dispose()
    }
    if (result.status === 'cancelled') return EXIT.cancelled
    if (result.status !== 'done' || scriptProblem) return EXIT.failed
    return EXIT.ok
  } finally {
    await cleanup()
  }
}

/** Finds the remote tools by name, waiting (up to `waitMs`) for their hosts to come up. */
async function findRemoteTools(
  bus: Bus,
  subjects: Subjects,
  names: string[],
  waitMs: number,
  onWaiting: () => void,
): Promise<Tool<unknown>[]> {
  const deadline = Date.now() + waitMs
  let warned = false
  for (;;) {
    try {
      return await discoverTools({ bus, subjects, names, timeoutMs: 2_000 })
    } catch (error) {
      if (!(BusNoRespondersError.is(error) || BusTimeoutError.is(error))) throw error
      if (Date.now() >= deadline) {
        const missing = names.filter((name) => error.subject === subjects.toolDescribe(name))
        throw new CliError(
          'TOOLS_NOT_FOUND',
          `no tool host serves ${(missing.length > 0 ? missing : names).join(', ')} on ${subjects.prefix} (start one: signalbox tools serve <module> --prefix ${subjects.prefix})`,
        )
      }
      if (!warned) onWaiting()
      warned = true
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
  }
}

/** The run's states and events, one line each (or JSON records). */
function traceRun(c: Colors, mode: 'embedded' | 'nats', subjects: Subjects, write: (line: any) => void, asJson: boolean) {
  let lastState = ''
  let hinted = false
  return {
    onState(runId: string, state: string) {
      if (state === lastState) return
      lastState = state
      if (asJson) write({ type: 'state', runId, state, at: Date.now() })
      else write(`${c.dim(' '.repeat(12))} ${c.cyan('state'.padEnd(18))} ${c.cyan(c.bold(state))}`)
    },
    onEvent(event: AgentEvent) {
      if (asJson) {
        write(event)
        return
      }
      if (event.type === 'text.delta' || event.type === 'model.request') return
      // The summary at the end says why the run failed: once is enough.
      if (event.type === 'run.error') return
      write(eventLine(event.type === 'run.end' ? { ...event, error: undefined } : event, c, { agent: false, run: false }))
      if (event.type === 'approval.requested' && mode === 'nats' && !hinted) {
        hinted = true
        write(
          c.dim(
            `${' '.repeat(13)}${' '.repeat(19)}waiting for a reviewer on ${subjects.approvals(event.agentId)} (signalbox review --prefix ${subjects.prefix})`,
          ),
        )
      }
      if (event.type === 'question.asked' && mode === 'nats') {
        write(c.dim(`${' '.repeat(13)}${' '.repeat(19)}waiting for an answer on ${subjects.ask(event.agentId)}`))
      }
    },
  }
}

function printResult(print: (line: string) => void, c: Colors, result: RunResult, durationMs: number): void {
  const summary = `${result.turns} turn${result.turns === 1 ? '' : 's'} · ${result.usage.totalTokens} tokens · ${formatElapsed(durationMs)}`
  print('')
  if (result.status === 'done') {
    print(c.bold('Final answer'))
    for (const line of result.output.split('\n')) print(`  ${line}`)
    print('')
    print(`${c.green('✔ done')} · ${summary}`)
    return
  }
  const color = result.status === 'cancelled' ? c.yellow : c.red
  const why = result.error ? `${result.error.code}: ${result.error.message}` : 'no reason given'
  print(`${color(`✘ ${result.status}`)}: ${why} · ${summary}`)
}

function printAudit(print: (line: string) => void, c: Colors, entries: AuditEntry[]): void {
  print('')
  print(c.bold('Audit'))
  for (const entry of entries) {
    const reason = entry.reason ? ` ${quote(entry.reason, 80)}` : ''
    const latency = entry.latencyMs === undefined ? '' : c.dim(` · ${formatElapsed(entry.latencyMs)}`)
    print(`  ${entry.kind.padEnd(18)} ${entry.toolName ?? '-'} · ${entry.actor}: ${entry.decision ?? ''}${reason}${latency}`)
  }
}

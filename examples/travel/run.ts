/**
 * The travel example: several agents as one system.
 *
 *   tsx examples/travel/run.ts              the hotel agent runs in a child process (`signalbox host`), over NATS
 *   tsx examples/travel/run.ts --embedded   every agent in this process, no NATS
 *
 * A planner delegates the train to the seed's trains agent (its first-class policy and its ID
 * masking intact: the planner never reads the passenger's ID) and the room to a hotel agent, whose
 * booking needs a person's approval. The approval request reaches the reviewer with the whole path
 * (planner › hotel); here a policy reviewer ("lucia") approves it and says what she was shown.
 *
 * Offline by default: scripted models over HTTP (the scripted model server, the real OpenAIProvider).
 * With SIGNALBOX_MODEL set (and OPENAI_BASE_URL, OPENAI_API_KEY) every agent uses that endpoint,
 * unless --scripted is passed. Flags: --embedded, --nats <url> (default $SIGNALBOX_NATS_URL, else
 * nats://127.0.0.1:4222), --prefix <prefix> (default travel.v1), --scripted.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import net from 'node:net'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { serveReviewer, watchEvents } from '@signalbox/actors'
import { connectNatsBus, type NatsBus } from '@signalbox/actors/nats'
import { type AgentSystem, createAgentSystem } from '@signalbox/actors/system'
import { type Agent, type AgentEvent, type ApprovalRequest, policyReviewer, RunFailedError } from '@signalbox/core'
import pc from 'picocolors'
import { openDemoModel, useRealEndpoint } from '../shared/model.ts'
import { colorsEnabled, exitQuietlyOnBrokenPipe } from '../shared/trace.ts'
import { createTrainsAgent } from '../trains/agent.ts'
import { TRAINS_MODEL, trainsScript } from '../trains/script.ts'
import { createHotelAgent } from './hotel.ts'
import { createPlannerAgent } from './planner.ts'
import { HOTEL_MODEL, hotelScript, PLANNER_MODEL, plannerScript, TRAVEL_PROMPT } from './script.ts'

exitQuietlyOnBrokenPipe()
const here = path.dirname(fileURLToPath(import.meta.url))
const root = path.resolve(here, '../..')
const BIN = path.join(root, 'packages/cli/bin/signalbox.js')

const { values } = parseArgs({
  options: {
    embedded: { type: 'boolean' },
    nats: { type: 'string' },
    prefix: { type: 'string' },
    scripted: { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  },
  strict: true,
})
if (values.help) {
  console.log('tsx examples/travel/run.ts [--embedded] [--nats <url>] [--prefix <prefix>] [--scripted]')
  process.exit(0)
}

const c = pc.createColors(colorsEnabled())
const out = (line = '') => process.stdout.write(`${line}\n`)
const embedded = values.embedded === true
const scripted = !useRealEndpoint()
const natsUrl = values.nats ?? process.env.SIGNALBOX_NATS_URL ?? 'nats://127.0.0.1:4222'
const prefix = values.prefix ?? 'travel.v1'

// ---- the trace: one line per event that matters, indented by the run's depth in the tree ----

const AGENT_WIDTH = 9
function quote(text: string, max = 110): string {
  const flat = JSON.stringify(text)
  return flat.length > max ? `${flat.slice(0, max - 2)}…"` : flat
}
function pathOf(request: ApprovalRequest): string {
  return [...(request.agentPath ?? []), request.agentId].join(' › ')
}
function trace(event: AgentEvent): undefined {
  const indent = '  '.repeat(event.runPath.length + 1)
  const who = c.magenta(event.agentId.padEnd(AGENT_WIDTH))
  // `undefined`, not `void`: the switch below returns what this returns.
  const row = (label: string, color: (s: string) => string, detail: string): undefined => {
    out(`${indent}${who} ${color(label.padEnd(18))} ${detail}`)
  }
  switch (event.type) {
    case 'run.start':
      return row(
        'run.start',
        c.bold,
        `${quote(event.input)}${event.parentRunId ? c.dim(` · child of ${event.agentPath?.at(-1) ?? 'a run'}`) : ''}`,
      )
    case 'tool.start':
      return row('tool.start', c.green, `${event.toolName}(${JSON.stringify(event.arguments)})`)
    case 'tool.end': {
      const ok = event.outcome === 'executed' || event.outcome === 'responded'
      return row('tool.end', ok ? c.green : c.red, `${event.toolName} · ${event.outcome} · ${quote(event.output)}`)
    }
    case 'approval.requested':
      return row(
        'approval.requested',
        c.yellow,
        `${event.request.toolName}(${JSON.stringify(event.request.arguments)}) · path ${pathOf(event.request)}`,
      )
    case 'approval.decided':
      return row(
        'approval.decided',
        c.yellow,
        `${event.decision.approved ? c.green('approved') : c.red('denied')} by ${event.decision.reviewer}`,
      )
    case 'run.end': {
      const color = event.status === 'done' ? c.green : c.red
      return row(
        'run.end',
        color,
        `${color(event.status)} · ${event.turns} turn${event.turns === 1 ? '' : 's'}${event.error ? ` · ${event.error.code}: ${event.error.message}` : ''}`,
      )
    }
    default:
      return undefined
  }
}

// ---- the reviewer: a person's policy, shown exactly what it approves and where it comes from ----

const lucia = policyReviewer(
  (request) => {
    out(
      `${c.yellow('reviewer lucia')} sees ${c.bold(request.toolName)}(${JSON.stringify(request.arguments)}) from ${c.bold(pathOf(request))} ` +
        c.dim(`(run path ${[...request.runPath, request.runId].map((id) => id.slice(0, 12)).join(' › ')})`),
    )
    return { approved: true, reason: 'one night near the station is within the travel policy' }
  },
  { name: 'lucia' },
)

// ---- the agents ----

const model = await openDemoModel({
  scripts: { [PLANNER_MODEL]: plannerScript, [TRAINS_MODEL]: trainsScript, ...(embedded ? { [HOTEL_MODEL]: hotelScript } : {}) },
})
const cleanups: (() => unknown)[] = [() => model.close()]
let hostProcess: ChildProcess | undefined
let hostExited: Promise<number> | undefined

async function main(): Promise<number> {
  out(c.bold('signalbox · travel: a planner, the trains agent and a hotel agent as one system'))
  out(`${c.dim('model   ')} ${model.describe(PLANNER_MODEL)}`)

  let system: AgentSystem
  const local: Agent[] = []
  if (embedded) {
    out(`${c.dim('where   ')} one process, no bus (--embedded)`)
    system = createAgentSystem({ hostId: 'travel' })
    local.push(createHotelAgent({ provider: model.provider(HOTEL_MODEL), reviewer: lucia }))
  } else {
    if (!(await reachable(natsUrl))) {
      out(
        c.red(
          `No NATS server at ${natsUrl}. Start one with JetStream (nats-server -js), pass --nats <url>, or run with --embedded.`,
        ),
      )
      return 1
    }
    const bus: NatsBus = await connectNatsBus({ servers: natsUrl, prefix, name: `travel-planner-${process.pid}` })
    cleanups.push(() => bus.close())
    out(`${c.dim('where   ')} planner and trains here; hotel in a child process (signalbox host) · ${natsUrl} · prefix ${prefix}`)
    system = createAgentSystem({ bus, hostId: `planner-${process.pid}` })
    // The reviewer for the hotel's approvals, reached over the bus (it could be any process).
    const reviews = serveReviewer({ bus, agentId: 'hotel', reviewer: lucia, subjects: system.subjects })
    cleanups.push(() => reviews.close())
    await reviews.ready
    const events = watchEvents({ bus, subjects: system.subjects, onEvent: trace })
    cleanups.push(() => events.unsubscribe())
    await events.ready
    await startHotelHost()
  }
  local.push(
    createPlannerAgent(system, { provider: model.provider(PLANNER_MODEL) }),
    createTrainsAgent({ provider: model.provider(TRAINS_MODEL) }),
  )
  for (const agent of local) {
    system.add(agent)
    if (embedded) agent.on('*', trace)
  }
  if (!embedded) await system.serve()
  cleanups.push(() => system.close())
  out(`${c.dim('agents  ')} planner (delegates), trains (firstClassPolicy, maskIds), hotel (book_hotel needs approval)`)
  out(`${c.dim('input   ')} ${quote(TRAVEL_PROMPT, 200)}`)
  out()

  const startedAt = Date.now()
  try {
    const result = await system.run('planner', TRAVEL_PROMPT)
    // Let the last events arrive from the other process before printing the answer.
    if (!embedded) await new Promise((resolve) => setTimeout(resolve, 150))
    out()
    out(c.bold('Final answer'))
    out(`  ${result.output}`)
    out()
    out(
      `${c.green('✔ done')} · answered by ${result.finishedBy} · ${result.turns} turns · ${result.usage.totalTokens} tokens (planner) · ${Date.now() - startedAt} ms`,
    )
    model.assertDone()
    return 0
  } catch (error) {
    const why = error instanceof RunFailedError ? `${error.result.status}: ${error.code}: ${error.message}` : String(error)
    out(c.red(`✘ ${why}`))
    return 1
  }
}

async function startHotelHost(): Promise<void> {
  const args = [
    BIN,
    'host',
    'examples/travel/hotel-host.ts',
    '--nats',
    natsUrl,
    '--prefix',
    prefix,
    '--host-id',
    'hotel-host',
    '--no-directory',
  ]
  if (scripted) args.push('--scripted')
  const child = spawn(process.execPath, args, {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...(c.isColorSupported ? { FORCE_COLOR: '1' } : { NO_COLOR: '1' }) },
  })
  hostProcess = child
  hostExited = new Promise((resolve) => child.once('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0))))
  const label = `${c.cyan('hotel-host')} ${c.dim('│')} `
  let seen = ''
  const ready = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the hotel host was not ready after 20 s:\n${seen}`)), 20_000)
    const onData = (chunk: Buffer) => {
      const text = chunk.toString('utf8')
      seen += text
      for (const line of text.split('\n').filter(Boolean)) out(`${label}${line}`)
      if (seen.includes('hosting 1 agent')) {
        clearTimeout(timer)
        resolve()
      }
    }
    child.stdout?.on('data', onData)
    child.stderr?.on('data', onData)
    void hostExited?.then((code) => {
      clearTimeout(timer)
      reject(new Error(`the hotel host exited (code ${code}) before it was ready:\n${seen}`))
    })
  })
  await ready
}

async function stopHotelHost(): Promise<void> {
  if (!hostProcess || !hostExited) return
  if (hostProcess.exitCode === null && hostProcess.signalCode === null) hostProcess.kill('SIGTERM')
  const timer = setTimeout(() => hostProcess?.kill('SIGKILL'), 5_000)
  const code = await hostExited
  clearTimeout(timer)
  if (code !== 0) out(c.red(`the hotel host exited with code ${code}`))
}

function reachable(url: string): Promise<boolean> {
  const parsed = new URL(url.split(',')[0] as string)
  return new Promise((resolve) => {
    const socket = net.connect(Number(parsed.port) || 4222, parsed.hostname || '127.0.0.1')
    const done = (ok: boolean) => {
      socket.destroy()
      resolve(ok)
    }
    socket.setTimeout(2_000, () => done(false))
    socket.once('connect', () => done(true))
    socket.once('error', () => done(false))
  })
}

let code = 1
try {
  code = await main()
} catch (error) {
  out(c.red(`✘ ${error instanceof Error ? error.message : String(error)}`))
} finally {
  await stopHotelHost()
  for (const cleanup of cleanups.reverse()) {
    try {
      await cleanup()
    } catch {
      // best effort
    }
  }
}
process.exitCode = code
// A handle someone forgot must not keep the example alive.
setTimeout(() => process.exit(code), 1_000).unref()

/**
 * (Processes start with tsx on a busy machine: timeouts are generous; the figures printed at the
 * end are measurements for docs/production.md, never asserted as speeds.)
 *
 * The production rehearsal: every capability on at once, as docs/production.md deploys it. A
 * 3-node nats-server cluster whose authorization block is `signalbox nats permissions` for each
 * user, each process under its own nkey; the stream and the KV buckets with three replicas. Agent
 * hosts A (planner, trains, claw, clerk), B and C (hotel) with a KV run store and trust policies;
 * an enforcing tool host (the claw machine) and an enforcing MCP tool host; two reviewer services
 * (`signalbox review`) whose person takes her time, a console in Chromium, an answerer, a steering
 * operator (`signalbox steer`), an observer (`signalbox watch`); spans into an OTLP receiver here.
 *
 * The travel and claw examples run through it, then the faults: the host of a child waiting for
 * approval is SIGKILLed, a cluster node is SIGKILLed, the reviewer service is SIGKILLed while its
 * person is deciding. Every run ends with its side effects exactly once, every decision is applied
 * once and by the right key, no server logs a permission violation, `signalbox audit --verify`
 * passes on the whole trail and flags a superuser's forgery, and each run tree is one trace.
 *
 * SIGNALBOX_REHEARSAL_LONG=1: the person takes 30 s instead of 10 s (both outlast the orphan
 * window, about 7 s, and the run lease of 3 s).
 */

import { execFile } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { promisify } from 'node:util'
import { serveAnswerer } from '@signalbox/actors'
import { connectNatsBus, type NatsBus } from '@signalbox/actors/nats'
import { KvRunStore } from '@signalbox/actors/store'
import { type AgentSystem, createAgentSystem, type SystemRunResult } from '@signalbox/actors/system'
import { createSigner, newUserSeed, signAuditEntry } from '@signalbox/actors/trust'
import { type AuditEntry, functionAnswerer } from '@signalbox/core'
import { createSubjects, directoryBucket, usedApprovalsBucket } from '@signalbox/core/bus'
import { ANSWER } from '@signalbox/examples/claw/script.ts'
import { PLAN_ANSWER, TRAVEL_PROMPT } from '@signalbox/examples/travel/script.ts'
import type { Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type CliProcess, cleanupAll, ROOT } from '../cli/support.ts'
import { chromiumForFile, type TestBrowser } from '../inspect/support.ts'
import { tsScript } from '../support/built.ts'
import { freePort } from '../support/nats-server.ts'
import { type ReceivedSpan, startOtlpReceiver } from '../tracing/otlp-receiver.ts'
import {
  type Deployment,
  PREFIX,
  RUN_BUCKET,
  readLines,
  signalbox,
  startDeployment,
  type UserName,
} from './support/deployment.ts'

const LONG = process.env.SIGNALBOX_REHEARSAL_LONG === '1'
/** How long the person at a reviewer service looks at a request before answering. */
const PERSON_MS = LONG ? 30_000 : 10_000
const LEASE_MS = 3_000
const FIXTURES = path.join(import.meta.dirname, 'fixtures')
const runCommand = async (file: string, args: string[]) => (await promisify(execFile)(file, args)).stdout
const MCP_SERVER = path.join(ROOT, 'test/support/mcp/test-server.ts')
const subjects = createSubjects(PREFIX)

interface Effect {
  tool: string
  runId: string
  callId: string
  host?: string
  pid: number
  at: number
}
interface WatchedEvent {
  type: string
  agentId: string
  runId: string
  at: number
  parentRunId?: string
  runPath?: string[]
  status?: string
  toolName?: string
  decision?: { approved: boolean; reviewer: string; evidence?: { signer?: string } }
  request?: { requestId: string; toolName: string; runId: string }
}

let d: Deployment
let browser: TestBrowser
let page: Page
let receiver: Awaited<ReturnType<typeof startOtlpReceiver>>
let desk: AgentSystem
let deskBus: NatsBus
let watch: CliProcess
const hosts = {} as Record<'a' | 'b' | 'c', CliProcess>
const reviewers = {} as Record<'tina' | 'rita', CliProcess>
const others: CliProcess[] = []
const closers: (() => unknown)[] = []
const figures: Record<string, number> = {}

const ledgerFile = () => d.file('ledger.jsonl')
const effects = () => readLines<Effect>(ledgerFile())
const mcpEffects = () => readFileSync(d.file('mcp-effects.log'), { encoding: 'utf8', flag: 'a+' }).split('\n').filter(Boolean)
/** Where the claw was over at each drop of a run (the tool host's ledger). */
const dropsOf = (runId: string) =>
  effects()
    .filter((e) => e.tool === 'drop_claw' && e.runId === runId)
    .map((e) => (e as Effect & { over?: string }).over)
/** Every event the observer has printed so far. */
const events = (): WatchedEvent[] =>
  watch.stdout
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as WatchedEvent)

/**
 * The observer's events that `match`, once it has printed one: it is a process of its own, and
 * under load its output can lag the run's end that the test has just seen.
 */
const observed = (match: (e: WatchedEvent) => boolean, what: string): Promise<WatchedEvent[]> =>
  until(
    () => {
      const found = events().filter(match)
      return found.length > 0 && found
    },
    `the observer to print ${what}`,
    30_000,
  )

async function until<T>(
  check: () => T | undefined | false | Promise<T | undefined | false>,
  what: string,
  timeoutMs = 60_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await check()
    if (value) return value
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

function hostArgs(module: string, id: string, user: 'hosta' | 'hostb' | 'hostc') {
  return d.start(
    user,
    [
      'host',
      path.join(FIXTURES, module),
      ...['--host-id', id, '--run-bucket', RUN_BUCKET, '--replicas', '3', '--lease', String(LEASE_MS)],
      ...['--trust', d.trustFile, '--otlp', receiver.url, '--json'],
    ],
    {
      name: id,
      env: {
        LEDGER: ledgerFile(),
        LEASE_MS: String(LEASE_MS),
        HOST_NAME: id,
        OTEL_SERVICE_NAME: id,
        // A host that stops answering can be asked where it is (`stuckReport`).
        NODE_OPTIONS: `--report-on-signal --report-signal=SIGUSR2 --report-directory=${reportDir(id)}`,
      },
    },
  )
}

const reportDir = (id: string) => path.join(d.dir, 'reports', id)

/**
 * What a host that stopped answering is doing: its process state and CPU time (`ps`), and the
 * JavaScript stack and pending handles of a Node diagnostic report (SIGUSR2), taken even while
 * its event loop is busy. Only read when a wait on the host has failed.
 */
async function stuckReport(host: CliProcess, id: string): Promise<string> {
  const pid = host.child.pid
  if (pid === undefined) return `${id}: no pid`
  const ps = await runCommand('ps', ['-o', 'pid,stat,pcpu,time', '-p', String(pid)]).catch((error: Error) => error.message)
  const dir = reportDir(id)
  mkdirSync(dir, { recursive: true })
  host.child.kill('SIGUSR2')
  const deadline = Date.now() + 10_000
  let report = ''
  while (report === '' && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 200))
    const file = readdirSync(dir).find((name) => name.endsWith('.json'))
    if (file !== undefined) report = readFileSync(path.join(dir, file), 'utf8')
  }
  if (report === '') return `${id}: ${ps}\nno diagnostic report within 10 s`
  const parsed = JSON.parse(report) as { javascriptStack?: { stack?: string[] }; libuv?: { type: string; is_active: boolean }[] }
  const handles = (parsed.libuv ?? []).filter((h) => h.is_active).map((h) => h.type)
  return [
    `${id}: ${ps}`,
    `JavaScript stack:\n${(parsed.javascriptStack?.stack ?? []).join('\n')}`,
    `active libuv handles: ${handles.join(', ')}`,
    `output:\n${host.output}`,
  ].join('\n')
}

/**
 * Every run in the run store as one line (agent, status, parent, lease, the approval it waits
 * for, its state), and every hotel event the observer printed: what a survivor had to go on when
 * it did not claim a run. Only read when a wait on a host has failed.
 */
async function storeReport(): Promise<string> {
  const admin = await d.admin()
  const store = new KvRunStore({ connection: admin.connection, bucket: RUN_BUCKET, replicas: 3 })
  const listing = await store.list({ signal: AbortSignal.timeout(15_000) }).catch((error: Error) => error)
  if (listing instanceof Error) return `the run store could not be listed: ${listing.message}`
  const now = Date.now()
  const runs = listing.runs.map(({ checkpoint: run, revision }) =>
    JSON.stringify({
      runId: run.runId,
      agentId: run.agentId,
      status: run.status,
      parent: run.runPath.at(-1),
      revision,
      lease: run.lease && { ...run.lease, leftMs: run.lease.expiresAt - now },
      waitsFor: run.pending.approvals.map((approval) => approval.requestId),
      state: (run.snapshot as { value?: unknown }).value,
      savedAt: run.savedAt,
    }),
  )
  const hotel = events().filter((e) => e.agentId === 'hotel' || e.type.startsWith('run.'))
  return [
    `the run store at ${now}:`,
    ...runs,
    ...listing.errors.map((error) => `unreadable: ${error.message}`),
    'the observer (runs, and every hotel event):',
    ...hotel.map((e) => JSON.stringify(e).slice(0, 400)),
  ].join('\n')
}

function startReviewer(user: 'tina' | 'rita'): CliProcess {
  return d.start(user, ['review', '--as', user, '--agent', 'hotel', '--trust', d.trustFile, '--otlp', receiver.url], {
    name: user,
    stdin: 'pipe',
  })
}

beforeAll(async () => {
  const started = Date.now()
  ;[d, browser, receiver] = await Promise.all([startDeployment(), chromiumForFile(), startOtlpReceiver()])
  closers.push(() => receiver.close())

  // Tool hosts first (the agents discover their tools at start), then the hosts, people and watchers.
  const toolHost = d.start(
    'tools',
    ['tools', 'serve', path.join(FIXTURES, 'claw-tools.ts'), '--trust', d.trustFile, '--replicas', '3', '--otlp', receiver.url],
    { name: 'tools', env: { LEDGER: ledgerFile() } },
  )
  const mcpHost = d.start(
    'mcp',
    [
      // `env`: an MCP client passes its server only a few variables of its own.
      ...[
        'tools',
        'serve',
        '--mcp',
        `env EFFECTS=${d.file('mcp-effects.log')} "${process.execPath}" ${tsScript(MCP_SERVER).join(' ')} stdio`,
      ],
      ...['--allow', 'lookup,delete_record', '--approve', 'delete_record', '--trust', d.trustFile, '--replicas', '3'],
      ...['--otlp', receiver.url],
    ],
    { name: 'mcp', env: { EFFECTS: d.file('mcp-effects.log') } },
  )
  watch = d.start('watcher', ['watch', '--json'], { name: 'watch' })
  const port = await freePort()
  const consoleProcess = d.start('sam', ['console', '--as', 'sam', '--port', String(port), '--trust', d.trustFile], {
    name: 'console',
  })
  others.push(toolHost, mcpHost, watch, consoleProcess)
  hosts.b = hostArgs('hotel-host.ts', 'host-b', 'hostb')
  hosts.c = hostArgs('hotel-host.ts', 'host-c', 'hostc')
  reviewers.tina = startReviewer('tina')
  reviewers.rita = startReviewer('rita')
  await Promise.all([
    toolHost.waitFor('enforcing approvals for drop_claw', 60_000),
    mcpHost.waitFor('enforcing approvals for delete_record', 60_000),
  ])
  hosts.a = hostArgs('host-a.ts', 'host-a', 'hosta')
  await Promise.all([
    ...Object.values(hosts).map((host) => host.waitFor('hosting', 60_000)),
    ...Object.values(reviewers).map((reviewer) => reviewer.waitFor('reviewing approval requests', 60_000)),
    consoleProcess.waitFor(`http://localhost:${port}`, 60_000),
    // Every later test reads the observer's events: one that never subscribed fails them all.
    watch.waitFor('watching every agent', 60_000),
  ])

  // The answerer (a service of its own) and the front desk that starts the root runs, in this process.
  const connect = async (user: 'ana' | 'desk') => {
    const bus: NatsBus = await connectNatsBus({
      servers: d.cluster.urls,
      prefix: PREFIX,
      credentials: { nkey: d.users[user].seedFile },
      inboxPrefix: `_INBOX.${user}`,
      consumerPrefix: user,
      name: user,
      ...(user === 'desk' ? {} : { durable: { access: 'check' as const } }),
    })
    closers.push(() => bus.close())
    return bus
  }
  const anaBus = await connect('ana')
  const ana = serveAnswerer({
    bus: anaBus,
    subjects,
    signer: createSigner(readFileSync(d.users.ana.seedFile, 'utf8')),
    answerer: functionAnswerer(() => ANSWER, { name: 'ana' }),
  })
  closers.push(() => ana.close())
  await ana.ready
  deskBus = await connect('desk')
  desk = createAgentSystem({
    bus: deskBus,
    subjects,
    hostId: 'desk',
    signer: createSigner(readFileSync(d.users.desk.seedFile, 'utf8')),
  })
  closers.push(() => desk.close())

  page = await browser.newPage({ viewport: { width: 1500, height: 1000 } })
  await page.goto(`http://127.0.0.1:${port}`)
  await page.locator('#connection.online').waitFor()
  figures.setUpMs = Date.now() - started
}, 180_000)

afterAll(async () => {
  await browser?.close()
  for (const close of closers.splice(0).reverse()) {
    try {
      await close()
    } catch {
      // best effort
    }
  }
  const logs = process.env.SIGNALBOX_REHEARSAL_LOGS
  if (logs) {
    mkdirSync(logs, { recursive: true })
    // A host restarted under its name keeps every process's output: the first as name.log, the next as name.2.log.
    const seen = new Map<string, number>()
    for (const proc of new Set([...others, ...Object.values(hosts), ...Object.values(reviewers)])) {
      const name = proc.name.replaceAll(' ', '_')
      const n = (seen.get(name) ?? 0) + 1
      seen.set(name, n)
      writeFileSync(path.join(logs, `${name}${n === 1 ? '' : `.${n}`}.log`), proc.output)
    }
    for (const node of d?.cluster.nodes ?? []) writeFileSync(path.join(logs, `nats-${node.name}.log`), node.log())
    writeFileSync(path.join(logs, 'spans.jsonl'), receiver.spans.map((span) => JSON.stringify(span)).join('\n'))
  }
  await cleanupAll()
  await d?.dispose()
  console.log(`rehearsal figures: ${JSON.stringify(figures)}`)
})

/**
 * A root run's id, chosen here: a test finds the run's events and requests by it. Never "the
 * latest request in the observer's output", which may still be an earlier run's when the
 * reviewer or the console already shows the new one.
 */
const newRunId = () => `run_${randomUUID()}`

/** The reviewer service (of the two sharing the hotel's requests) that shows its person the next request for `tool`. */
async function shownTo(tool: string, among = Object.values(reviewers)) {
  const prompt = `Approve ${tool}? [y/n]`
  const counts = new Map(among.map((r) => [r, r.output.split(prompt).length]))
  const person = await until(() => among.find((r) => r.output.split(prompt).length > (counts.get(r) ?? 0)), `a ${tool} prompt`)
  return { person, shownAt: Date.now() }
}

const seenCards = new Set<string>()
/** The inbox card of the next request for `tool` (one not returned before), once the console shows it. */
async function card(tool: string) {
  await page.locator('nav a[data-tab="inbox"]').click()
  const id = await until(async () => {
    for (const found of await page.locator(`.item[data-tool="${tool}"]`).all()) {
      const candidate = await found.getAttribute('data-id')
      if (candidate && !seenCards.has(candidate)) return candidate
    }
    return undefined
  }, `a new ${tool} card`)
  seenCards.add(id)
  return page.locator(`.item[data-id="${id}"]`)
}

/** Runs `signalbox <args>` as `user` to the end. */
async function runAs(user: UserName, args: string[]) {
  const proc = d.start(user, args, { name: `${user} ${args[0]}` })
  const code = await proc.exited
  return { code, stdout: proc.stdout, output: proc.output }
}

describe('the production rehearsal', () => {
  it('travel: the planner on host A delegates the room to the hotel on another host; the person takes her time', async () => {
    const started = desk.run('planner', TRAVEL_PROMPT)
    const { person, shownAt } = await shownTo('book_hotel')
    expect(person.output).toContain('Hotel Costa Galana')
    // She looks at it for longer than the orphan window and the run lease, then says yes.
    await new Promise((resolve) => setTimeout(resolve, PERSON_MS))
    person.child.stdin?.write('y\n')
    const result = await started
    figures.travelApprovedAfterMs = Date.now() - shownAt
    expect(result.output).toBe(PLAN_ANSWER)
    const booked = effects().filter((e) => e.tool === 'book_hotel')
    expect(booked).toHaveLength(1)
    // The hotel host that ran the child logs its end: a host stuck after a run would otherwise show
    // only at the takeover below, as a survivor that never claims.
    const childRun = booked[0]?.runId as string
    const ranIt = (['b', 'c'] as const).find((k) => hosts[k].stdout.includes(`"runId":"${childRun}"`))
    if (ranIt === undefined) throw new Error(`no hotel host says it ran ${childRun}`)
    await hosts[ranIt].waitFor(new RegExp(`"type":"run.end"[^\\n]*"runId":"${childRun}"`), 30_000).catch(async (error: Error) => {
      throw new Error(`${error.message}\n\n${await stuckReport(hosts[ranIt], `host-${ranIt}`)}\n\n${await storeReport()}`)
    })
    const decided = await observed((e) => e.type === 'approval.decided' && e.agentId === 'hotel', "the hotel's approval.decided")
    expect(decided.map((e) => [e.decision?.approved, e.decision?.reviewer, e.decision?.evidence?.signer])).toEqual([
      [true, person.name, d.users[person.name as 'tina' | 'rita'].publicKey],
    ])
    // Nobody withdrew it as orphaned (a `system` denial), nothing was refused, nothing timed out.
    for (const reviewer of Object.values(reviewers)) expect(reviewer.output).not.toMatch(/by system|withdrawn/)
    expect(events().filter((e) => ['approval.rejected', 'approval.timeout', 'approval.unavailable'].includes(e.type))).toEqual([])
  }, 120_000)

  it('claw: a question answered by the answerer, the drop approved in the console and run once by the enforcing tool host', async () => {
    const run = desk.run('claw', 'Get me the bear!')
    const drop = await card('drop_claw')
    await drop.locator('button.approve').click()
    const result = await run
    expect(result.output).toBe('Got it! The polar bear is in the prize chute.')
    expect(dropsOf(result.runId)).toEqual(['polar bear'])
    const answered = await observed((e) => e.type === 'question.answered' && e.runId === result.runId, 'question.answered')
    expect(answered.map((e) => (e as { answeredBy?: string }).answeredBy)).toEqual(['ana'])
  }, 120_000)

  it('the console denies and steers, and the model moves on; the steering operator withdraws a pending drop', async () => {
    const run = desk.run('claw', 'Get me the bear!')
    const first = await card('drop_claw')
    await first.locator('input.reason').fill('No, the penguin!')
    await first.locator('button.deny').click()
    // Denied with a prize named: the model moves over the penguin and asks to drop again; sam changes his mind.
    const second = await card('drop_claw')
    await second.locator('input.steer-text').fill('No, wait! The rabbit!')
    await second.locator('button.steer').click()
    await (await card('drop_claw')).locator('button.approve').click()
    const result = await run
    expect(result.output).toBe('Got it! The rabbit is in the prize chute.')
    expect(dropsOf(result.runId)).toEqual(['rabbit'])

    // The operator's correction (`signalbox steer`, signed with ops's key) withdraws the drop waiting for sam.
    const runId = newRunId()
    const again = desk.run('claw', 'Get me the bear!', { runId })
    const pending = await card('drop_claw')
    const steer = await signalbox([
      'steer',
      'claw',
      'No, wait! The penguin!',
      '--run',
      runId,
      '--as',
      'ops',
      ...d.users.ops.flags,
    ])
    expect(steer.code, steer.stderr).toBe(0)
    await pending.waitFor({ state: 'detached', timeout: 30_000 })
    await (await card('drop_claw')).locator('button.approve').click()
    const steered = await again
    expect(steered.output).toBe('Got it! The penguin is in the prize chute.')
    expect(dropsOf(steered.runId)).toEqual(['penguin'])
    const applied = await observed((e) => e.type === 'steering.applied' && e.runId === runId, 'steering.applied')
    expect(applied.map((e) => (e as { from?: string }).from)).toEqual(['ops'])
  }, 120_000)

  it('the console edits the arguments of an MCP call; the enforcing MCP host runs the edited call once', async () => {
    const run = desk.run('clerk', 'Delete record r-1.')
    const item = await card('delete_record')
    await item.locator('details.edit summary').click()
    await item.locator('textarea.edited-arguments').fill('{ "id": "r-2" }')
    await item.locator('button.approve-edited').click()
    const result = await run
    expect(result.output).toBe('Done.')
    expect(mcpEffects()).toEqual(['deleted r-2'])
  }, 120_000)

  it('the console cancels a run waiting for approval: nothing runs', async () => {
    const before = effects().length
    const runId = newRunId()
    const run = desk.run('claw', 'Get me the bear!', { runId }).catch((error: unknown) => error)
    const item = await card('drop_claw')
    await page.locator('nav a[data-tab="runs"]').click()
    await page.locator(`#run-tree a[data-run="${runId}"]`).click()
    await page.locator('.run-actions button.cancel').click()
    await page.locator('nav a[data-tab="inbox"]').click()
    await item.waitFor({ state: 'detached', timeout: 30_000 })
    const outcome = await run
    expect(String((outcome as { status?: string }).status ?? outcome)).toMatch(/cancel/i)
    expect(effects().length).toBe(before)
  }, 120_000)

  /** The plan whose hotel run was taken over by another host, still to be heard from. */
  let takenOver: { plan: Promise<SystemRunResult | Error>; child: string; hosts: string[] } | undefined

  // After the runs above: a host makes the directory's bucket at its first delegation, a tool host
  // its ledger at its first gated call.
  it('the stream, every consumer and the KV buckets keep three replicas', async () => {
    const admin = await d.admin()
    const jsm = await admin.manager()
    expect((await jsm.streams.info(admin.streamName)).config.num_replicas).toBe(3)
    for (const bucket of [RUN_BUCKET, directoryBucket(PREFIX), usedApprovalsBucket(PREFIX)])
      expect((await jsm.streams.info(`KV_${bucket}`)).config.num_replicas, bucket).toBe(3)
    const consumers: [string, number][] = []
    for await (const consumer of jsm.consumers.list(admin.streamName)) {
      // A consumer's copies: its leader and its replicas.
      consumers.push([consumer.name, 1 + (consumer.cluster?.replicas?.length ?? 0)])
    }
    expect(consumers.length).toBeGreaterThan(10)
    expect(consumers.filter(([, copies]) => copies !== 3)).toEqual([])
  })

  it('the host of a child waiting for approval is SIGKILLed: the other hotel host takes the run over and applies the decision once', async () => {
    const planId = newRunId()
    const plan = desk.run('planner', TRAVEL_PROMPT, { runId: planId }).catch((error: Error) => error)
    const { person, shownAt } = await shownTo('book_hotel')
    // This plan's hotel run, by its root: the observer may print the request after the reviewer shows it.
    const child = await until(
      () => events().find((e) => e.type === 'approval.requested' && e.agentId === 'hotel' && e.runPath?.[0] === planId)?.runId,
      'the hotel run waiting for approval',
    )
    const owner = await until(
      () => (['b', 'c'] as const).find((k) => hosts[k].stdout.includes(`"runId":"${child}"`)),
      `the hotel host that says it runs ${child}`,
      30_000,
    )
    const survivor = owner === 'b' ? 'c' : 'b'
    takenOver = { plan, child, hosts: [`host-${owner}`, `host-${survivor}`] }
    const killedAt = Date.now()
    hosts[owner].child.kill('SIGKILL')
    await hosts[owner].exited
    others.push(hosts[owner])
    await hosts[survivor].waitFor(`"type":"claimed","runId":"${child}"`, 60_000).catch(async (error: Error) => {
      throw new Error(
        `${error.message}\n\nthe survivor:\n${await stuckReport(hosts[survivor], `host-${survivor}`)}\n\nthe killed host's output:\n${hosts[owner].output}\n\nhost-a's output:\n${hosts.a.output}\n\n${await storeReport()}`,
      )
    })
    figures.takeoverMs = Date.now() - killedAt
    // The person still takes her time; her yes reaches the run where it now is.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, PERSON_MS - (Date.now() - shownAt))))
    person.child.stdin?.write('y\n')
    await until(() => events().find((e) => e.type === 'run.end' && e.runId === child), 'the hotel run to end')
    expect(
      events()
        .filter((e) => e.type === 'run.end' && e.runId === child)
        .map((e) => e.status),
    ).toEqual(['done'])
    const booked = effects().filter((e) => e.tool === 'book_hotel' && e.runId === child)
    expect(booked.map((e) => e.host)).toEqual([`host-${survivor}`])
    // The killed host comes back under its own id, for what follows.
    hosts[owner] = hostArgs('hotel-host.ts', `host-${owner}`, owner === 'b' ? 'hostb' : 'hostc')
    await hosts[owner].waitFor('hosting', 60_000)
  }, 120_000)

  it('the parent hears the result of its child from the host that took the child over, and the plan completes', async () => {
    if (takenOver === undefined) throw new Error('needs the takeover above')
    const timeout = new Promise<Error>((resolve) =>
      setTimeout(() => resolve(new Error('the planner never heard from its child')), 20_000),
    )
    const result = await Promise.race([takenOver.plan, timeout])
    if (result instanceof Error) throw result
    expect(result.output).toBe(PLAN_ANSWER)
  }, 60_000)

  it('the reviewer service is SIGKILLed while its person decides: the other service shows the request, and its decision is applied once', async () => {
    const since = Date.now()
    const started = desk.run('planner', TRAVEL_PROMPT)
    const { person } = await shownTo('book_hotel')
    const other = person === reviewers.tina ? reviewers.rita : reviewers.tina
    const killedAt = Date.now()
    person.child.kill('SIGKILL')
    await person.exited
    others.push(person)
    const { person: next } = await shownTo('book_hotel', [other])
    figures.reviewerPickUpMs = Date.now() - killedAt
    next.child.stdin?.write('y\n')
    const result = await started
    expect(result.output).toBe(PLAN_ANSWER)
    const decided = await observed(
      (e) => e.type === 'approval.decided' && e.agentId === 'hotel' && e.at >= since,
      "the hotel's approval.decided",
    )
    expect(decided.map((e) => [e.decision?.reviewer, e.decision?.evidence?.signer])).toEqual([
      [next.name, d.users[next.name as 'tina' | 'rita'].publicKey],
    ])
    expect(effects().filter((e) => e.tool === 'book_hotel' && decided.some((x) => x.runId === e.runId))).toHaveLength(1)
  }, 180_000)

  it('the stream leader node is SIGKILLed while a drop waits for the console: the decision is applied once, on the nodes left', async () => {
    const run = desk.run('claw', 'Get me the bear!')
    const item = await card('drop_claw')
    const admin = await d.admin()
    const leaderName = (await (await admin.manager()).streams.info(admin.streamName)).cluster?.leader
    const leader = d.cluster.node(leaderName as string)
    const killedAt = Date.now()
    await leader.kill()
    await item.locator('button.approve').click()
    const result = await run
    const drop = effects().find((e) => e.tool === 'drop_claw' && e.runId === result.runId)
    figures.nodeLossDropAfterMs = (drop?.at ?? Number.NaN) - killedAt
    expect(result.output).toBe('Got it! The polar bear is in the prize chute.')
    expect(dropsOf(result.runId)).toEqual(['polar bear'])
    await leader.restart()
  }, 180_000)

  it("a reviewer's key is rotated while everything runs: the new key next to the old, a decision signed with it, then the old one refused", async () => {
    // 1. Her new key, made where she works.
    const made = await signalbox(['keys', 'gen', '--out', d.file('tina-2.nk'), '--json'])
    const fresh = (JSON.parse(made.stdout) as { publicKey: string }).publicKey
    const old = d.users.tina.publicKey
    // 2. Next to the old one: a second login in the server configuration (every node reloads), and
    //    the same place in the policy; the processes that read the policy restart, one host at a time.
    await d.authorize('tina', fresh)
    const trust = structuredClone(d.trust)
    trust.keys[fresh] = 'tina'
    trust.reviewers.book_hotel?.push(fresh)
    trust.answerers.push(fresh)
    d.writeTrust(trust)
    for (const k of ['b', 'c'] as const) {
      await hosts[k].stop('SIGTERM')
      others.push(hosts[k])
      hosts[k] = hostArgs('hotel-host.ts', `host-${k}`, k === 'b' ? 'hostb' : 'hostc')
      await hosts[k].waitFor('hosting', 60_000)
    }
    // 3. She restarts with the new seed (the other reviewer service stays down for this run).
    await Promise.all(Object.values(reviewers).map((reviewer) => reviewer.stop('SIGTERM')))
    others.push(...Object.values(reviewers))
    writeFileSync(d.file('tina-old.nk'), readFileSync(d.users.tina.seedFile))
    writeFileSync(d.users.tina.seedFile, readFileSync(d.file('tina-2.nk')))
    reviewers.tina = startReviewer('tina')
    await reviewers.tina.waitFor('reviewing approval requests', 60_000)
    const since = Date.now()
    const plan = desk.run('planner', TRAVEL_PROMPT)
    const { person } = await shownTo('book_hotel', [reviewers.tina])
    person.child.stdin?.write('y\n')
    expect((await plan).output).toBe(PLAN_ANSWER)
    const decided = await observed(
      (e) => e.type === 'approval.decided' && e.agentId === 'hotel' && e.at >= since,
      "the hotel's approval.decided",
    )
    expect(decided.map((e) => [e.decision?.reviewer, e.decision?.evidence?.signer])).toEqual([['tina', fresh]])
    // 4. The old key goes: out of the server configuration and the policy; it can no longer log in.
    await d.authorize('tina', fresh, { replace: true })
    const withoutOld = structuredClone(d.trust)
    delete withoutOld.keys[old]
    withoutOld.reviewers.book_hotel = withoutOld.reviewers.book_hotel?.filter((key) => key !== old) ?? []
    withoutOld.answerers = withoutOld.answerers.filter((key) => key !== old)
    d.writeTrust(withoutOld)
    const refused = await connectNatsBus({
      servers: d.cluster.urls,
      prefix: PREFIX,
      credentials: { nkey: d.file('tina-old.nk') },
      durable: { access: 'check' },
      name: 'tina-old',
    }).then(
      (bus) => bus.close().then(() => 'connected'),
      (error: { code?: string }) => error.code,
    )
    expect(refused).toBe('NATS_AUTHORIZATION_VIOLATION')
  }, 180_000)

  it('the enforcing tool host refuses a drop nobody approved, sent by a client allowed to call tools, and audits it', async () => {
    const call = {
      v: 1,
      type: 'tool.call',
      callId: 'call_rogue',
      toolName: 'drop_claw',
      agentId: 'desk',
      runId: 'run_rogue',
      arguments: {},
      deadline: Date.now() + 30_000,
    }
    const reply = await deskBus.request(subjects.tool('drop_claw'), JSON.stringify(call), {
      timeoutMs: 10_000,
      headers: { 'Signalbox-Idempotency-Key': 'run_rogue:call_rogue' },
    })
    const answer = JSON.parse(new TextDecoder().decode(reply.data)) as { type: string; error?: { code: string } }
    expect(answer).toMatchObject({ type: 'error', error: { code: 'APPROVAL_REQUIRED' } })
    expect(effects().filter((e) => e.runId === 'run_rogue')).toEqual([])
    const listed = await runAs('watcher', ['audit', '--agent', 'desk', '--json'])
    const entries = listed.stdout
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as AuditEntry)
    expect(entries.filter((e) => e.kind === 'tool.refused').map((e) => [e.callId, e.signer])).toEqual([
      ['call_rogue', d.users.tools.publicKey],
    ])
  }, 60_000)

  it('every decision was applied once and by a key the policy allows for its tool', async () => {
    const listed = await runAs('watcher', ['audit', '--json'])
    expect(listed.code, listed.output).toBe(0)
    const entries = listed.stdout
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as AuditEntry & { evidence?: { signer?: string } })
    const decisions = entries.filter((e) => e.kind === 'approval.granted' || e.kind === 'approval.denied')
    const allowed: Record<string, string[]> = { book_hotel: ['tina', 'rita'], drop_claw: ['sam'], delete_record: ['sam'] }
    // Every key that was ever valid, rotated ones included, by the name the policy gives it.
    const byName = d.auditTrust.keys
    const calls = new Set<string>()
    for (const entry of decisions) {
      const call = `${entry.runId} ${entry.callId}`
      expect(calls.has(call), call).toBe(false)
      calls.add(call)
      expect(allowed[entry.toolName as string]).toContain(entry.actor)
      expect(byName[entry.evidence?.signer as string]).toBe(entry.actor)
    }
    // Every side effect once: no tool ran twice for one call, whatever died on the way.
    const ran = effects().map((e) => `${e.tool} ${e.runId} ${e.callId}`)
    expect(ran.length).toBe(new Set(ran).size)
    expect(mcpEffects()).toEqual(['deleted r-2'])
    // The travel runs: one booking each (the first, after the takeover, after the reviewer's death, after the rotation).
    expect(decisions.filter((e) => e.toolName === 'book_hotel')).toHaveLength(4)
    expect(entries.filter((e) => e.kind === 'approval.rejected')).toEqual([])
  }, 60_000)

  it('signalbox audit --verify passes on the whole trail and flags a grant forged by a superuser', async () => {
    // Against every key that was ever valid: entries signed before the rotation still verify.
    const verify = [
      'audit',
      '--verify',
      '--trust',
      d.auditTrustFile,
      '--agent-key',
      `${d.users.tools.publicKey},${d.users.mcp.publicKey}`,
    ]
    const clean = await runAs('watcher', verify)
    expect(clean.code, clean.output).toBe(0)
    expect(clean.stdout).toMatch(/\d+ entries checked, 0 do not verify/)

    // The operator's superuser writes a grant for the claw: entry and decision signed by fresh keys.
    const admin = await d.admin()
    const writer = createSigner(newUserSeed())
    const reviewer = createSigner(newUserSeed())
    const now = Date.now()
    const decision = reviewer.sign({
      v: 1,
      type: 'approval.decision',
      requestId: 'request_forged',
      callId: 'call_forged',
      digest: 'sha256:0',
      approved: true,
      reviewer: 'sam',
      decidedAt: now,
    })
    const forged = signAuditEntry(writer, {
      kind: 'approval.granted',
      agentId: 'claw',
      runId: 'run_forged',
      runPath: [],
      callId: 'call_forged',
      toolName: 'drop_claw',
      shown: {},
      digest: 'sha256:0',
      decision: 'approved',
      actor: 'sam',
      requestedAt: now,
      decidedAt: now,
      evidence: decision,
    })
    await admin.durablePublish(
      subjects.audit('claw', 'approval.granted'),
      JSON.stringify({ v: 1, type: 'audit', entry: forged }),
      {
        msgId: 'forged-grant',
      },
    )
    const flagged = await runAs('watcher', verify)
    expect(flagged.code, flagged.output).toBe(1)
    expect(flagged.stdout.match(/^FAIL.*$/gm)).toEqual([
      expect.stringMatching(/approval\.granted drop_claw by sam: entry signed by \w+ \(not in the policy\)/),
    ])
  }, 60_000)

  it('each run tree is one trace, across hosts, a takeover included', async () => {
    const trees = new Map<string, Set<string>>()
    for (const e of events()) {
      if (e.type !== 'run.start') continue
      const root = e.runPath?.[0] ?? e.runId
      trees.set(root, (trees.get(root) ?? new Set()).add(e.runId))
    }
    const runOf = (span: ReceivedSpan) => span.attributes['signalbox.run.id'] as string | undefined
    // Hosts export in batches: wait until every run that ended has its spans.
    const ended = events()
      .filter((e) => e.type === 'run.end')
      .map((e) => e.runId)
    const missing = () => ended.filter((run) => !receiver.spans.some((span) => runOf(span) === run))
    await until(() => missing().length === 0, 'spans of every run', 30_000).catch((error: Error) => {
      throw new Error(`${error.message}: none for ${missing().join(', ')}`)
    })
    for (const [root, tree] of trees) {
      const traces = new Set(receiver.spans.filter((span) => tree.has(runOf(span) ?? '')).map((span) => span.traceId))
      expect(traces.size, `run tree ${root}`).toBe(1)
    }
    expect(trees.size).toBe(10)
    // The child taken over: the host that finished it continued its trace (the killed host's spans
    // not yet exported died with it; those that were are in the same trace, checked above).
    const { child, hosts: both } = takenOver as NonNullable<typeof takenOver>
    const resumed = receiver.spans.filter(
      (span) => runOf(span) === child && span.service === both[1] && span.name === 'invoke_agent hotel',
    )
    expect(resumed.map((span) => span.attributes['signalbox.run.resumed'])).toEqual([true])
  }, 60_000)

  it('no server logged a permission violation', () => {
    expect(d.violations()).toEqual([])
  })
})

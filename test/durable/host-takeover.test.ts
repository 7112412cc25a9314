/**
 * A crashed host's REAL run continues on another host: two agent-system processes
 * (`createAgentSystem({ runs })`) share a JetStream KV run store on the real NATS server. Host A
 * starts a run that waits for approval and is killed with SIGKILL; host B takes the run over once
 * A's lease expired, shows the same request again, a reviewer approves, and the tool's side effect
 * happens exactly once (on B), with the decision in the audit.
 */
import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { serveReviewer } from '@signalbox/actors'
import { connectNatsBus } from '@signalbox/actors/nats'
import { createAgentSystem } from '@signalbox/actors/system'
import { type ApprovalRequest, type AuditEntry, decideApproval } from '@signalbox/core'
import { createSubjects } from '@signalbox/core/bus'
import { startScriptedModelServer } from '@signalbox/core/testing'
import { describe, expect, it, onTestFinished } from 'vitest'
import { type CrashChild, startCrashChild } from '../support/crash-harness.ts'
import { NATS_URL, uniquePrefix } from '../support/env.ts'
import type { HostConfig } from './fixtures/system-host.ts'

const HOST = 'test/durable/fixtures/system-host.ts'
const LEASE_MS = 1_500 // short, so the takeover comes quickly; renewed every 500 ms by the live owner

interface Printed {
  type: string
  host: string
  [key: string]: unknown
}

function printed(child: CrashChild): Printed[] {
  return child
    .stdout()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Printed)
}

async function next(child: CrashChild, type: string, where: (line: Printed) => boolean = () => true): Promise<Printed> {
  let exited = false
  void child.exited.then(() => {
    exited = true
  })
  const until = Date.now() + 45_000
  for (;;) {
    const found = printed(child).find((line) => line.type === type && where(line))
    if (found) return found
    if (exited || Date.now() > until)
      throw new Error(`no "${type}" line${exited ? ' (the host exited)' : ''}:\n${child.output()}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

/** The model, the bus, the reviewer (who decides once `release` is called) and a way to start hosts. */
type Deployed = Awaited<ReturnType<typeof deployment>>

async function deployment() {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'host-takeover-'))
  const prefix = uniquePrefix()
  const bucket = `takeover_${randomBytes(4).toString('hex')}`
  const effects = path.join(dir, 'effects.txt')
  const audit = path.join(dir, 'audit.jsonl')
  const model = await startScriptedModelServer({
    scripts: {
      claw: [
        { toolCalls: [{ id: 'call_seal', name: 'drop_claw', arguments: { prize: 'seal' } }] },
        {
          content: 'Dropped.',
          expect: (request) =>
            request.messages.some((m) => m.role === 'tool' && m.content === 'dropped on the seal') ||
            'the model should read the tool result',
        },
      ],
    },
  })
  const bus = await connectNatsBus({ servers: NATS_URL, name: 'reviewer', prefix, durable: { storage: 'memory' } })
  onTestFinished(async () => {
    await bus.connection.request(`$JS.API.STREAM.DELETE.KV_${bucket}`).catch(() => {})
    await bus.close()
    await model.close()
    await rm(dir, { recursive: true, force: true })
  })
  const config = (hostId: string, start?: string): HostConfig => ({
    hostId,
    natsUrl: NATS_URL,
    prefix,
    bucket,
    modelUrl: model.url,
    model: 'claw',
    effects,
    audit,
    leaseMs: LEASE_MS,
    ...(start ? { start } : {}),
  })
  const start = (hostId: string, run?: string) =>
    startCrashChild(HOST, { env: { SYSTEM_HOST: JSON.stringify(config(hostId, run)) }, ready: '"serving"' })

  // The reviewer decides once host B has shown the request again (A is dead by then).
  let release: () => void = () => {}
  const bOwnsIt = new Promise<void>((resolve) => {
    release = resolve
  })
  const shown: ApprovalRequest[] = []
  const service = serveReviewer({
    bus,
    subjects: createSubjects(prefix),
    reviewer: {
      review: async (request) => {
        shown.push(request)
        await bOwnsIt
        return decideApproval(request, true, 'alice', Date.now())
      },
    },
  })
  onTestFinished(() => service.close())
  await service.ready
  const effectsOf = () => readFileSync(effects, 'utf8')
  const auditOf = () =>
    readFileSync(audit, 'utf8')
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as AuditEntry & { host: string })
  return { bus, prefix, model, start, release, shown, effectsOf, auditOf }
}

/**
 * The run ended on `owner` alone: done there, its tool run once there, one grant audited by it,
 * nothing run by the host it was taken from, and the request stored (and decided) once.
 */
async function ranOnceOn(
  owner: CrashChild,
  ownerId: string,
  { instead, asked, deployed }: { instead: CrashChild; asked: ApprovalRequest; deployed: Deployed },
): Promise<void> {
  const end = await next(owner, 'run.end', (line) => line.runId === 'run-seal')
  expect(end).toMatchObject({ status: 'done', output: 'Dropped.' })
  expect(deployed.effectsOf()).toBe(`drop_claw seal by ${ownerId}\n`)
  const entries = deployed.auditOf()
  expect(entries.map((e) => [e.kind, e.actor, e.host])).toEqual([['approval.granted', 'alice', ownerId]])
  expect(entries[0]).toMatchObject({ runId: 'run-seal', callId: asked.callId, digest: asked.digest, decision: 'approved' })
  expect(printed(instead).filter((line) => line.type === 'tool.end')).toEqual([])
  // Stored once (same request id, de-duplicated by JetStream): the reviewer decided it once.
  expect(deployed.shown.map((request) => request.requestId)).toEqual([asked.requestId])
  deployed.model.assertDone()
}

describe('host takeover of a real run', { timeout: 60_000 }, () => {
  it('a run waiting for approval on a killed host continues on another: the tool runs once, the decision is audited', async () => {
    const deployed = await deployment()
    const { start, release } = deployed
    const a = await start('host-a', 'run-seal')
    onTestFinished(async () => {
      await a.kill().catch(() => {})
    })
    const asked = (await next(a, 'approval.requested')).request as ApprovalRequest
    const b = await start('host-b')
    onTestFinished(async () => {
      await b.kill().catch(() => {})
    })
    await a.kill()

    const claimed = await next(b, 'takeover', (line) => line.event === 'claimed' && line.runId === 'run-seal')
    expect(claimed.from).toBe('host-a')
    const again = (await next(b, 'approval.requested')).request as ApprovalRequest
    expect(again).toEqual(asked) // the same request: ids, digest, deadline
    release()

    await ranOnceOn(b, 'host-b', { instead: a, asked, deployed })
  })

  it('a host stopped past its lease (SIGSTOP) loses the run to another; continued, it lets go: the tool runs once, on the new owner', async () => {
    const deployed = await deployment()
    const { start, release } = deployed
    const a = await start('host-a', 'run-seal')
    onTestFinished(async () => {
      await a.kill().catch(() => {})
    })
    const asked = (await next(a, 'approval.requested')).request as ApprovalRequest
    const b = await start('host-b')
    onTestFinished(async () => {
      await b.kill().catch(() => {})
    })
    // Stalled (a paused VM, a long GC, an overloaded machine): alive, but its lease runs out.
    process.kill(a.pid, 'SIGSTOP')

    const claimed = await next(b, 'takeover', (line) => line.event === 'claimed' && line.runId === 'run-seal')
    expect(claimed.from).toBe('host-a')
    const again = (await next(b, 'approval.requested')).request as ApprovalRequest
    expect(again).toEqual(asked) // the same request: ids, digest, deadline
    // A wakes up: its next write (a lease renewal) is refused, and its run ends there.
    process.kill(a.pid, 'SIGCONT')
    const lost = await next(a, 'result', (line) => line.runId === 'run-seal')
    expect(lost).toMatchObject({ code: 'RUN_REVISION_CONFLICT' })
    release()

    await ranOnceOn(b, 'host-b', { instead: a, asked, deployed })
  })

  it('the child of a remote caller, its host stopped past its lease: the new owner finishes it and the caller hears the result', async () => {
    const deployed = await deployment()
    const { bus, prefix, start, release } = deployed
    const hosts = [await start('host-a'), await start('host-b')]
    for (const host of hosts)
      onTestFinished(async () => {
        await host.kill().catch(() => {})
      })
    const caller = createAgentSystem({ bus, subjects: createSubjects(prefix), hostId: 'caller', childLostAfterMs: 2_000 })
    onTestFinished(() => caller.close())
    const result = caller.run('claw', 'Drop the claw on the seal.', { runId: 'run-seal' }).catch((error: Error) => error)
    const asked = await Promise.race(
      hosts.map(async (host) => (await next(host, 'approval.requested')).request as ApprovalRequest),
    )
    const a = hosts.find((host) => printed(host).some((line) => line.type === 'approval.requested')) as CrashChild
    const b = hosts.find((host) => host !== a) as CrashChild
    const [aId, bId] = a === hosts[0] ? ['host-a', 'host-b'] : ['host-b', 'host-a']
    // Stalled (a paused VM, a long GC, an overloaded machine): alive, but its lease runs out.
    process.kill(a.pid, 'SIGSTOP')

    const claimed = await next(b, 'takeover', (line) => line.event === 'claimed' && line.runId === 'run-seal')
    expect(claimed.from).toBe(aId)
    const again = (await next(b, 'approval.requested')).request as ApprovalRequest
    expect(again).toEqual(asked) // the same request: ids, digest, deadline
    // A wakes up beside the decision: whichever it meets first, its run ends at its next write
    // (refused), and the decision is applied and audited by B alone.
    process.kill(a.pid, 'SIGCONT')
    release()

    await ranOnceOn(b, bId, { instead: a, asked, deployed })
    const heard = await result
    if (heard instanceof Error) throw heard
    expect(heard.output).toBe('Dropped.')
  })
})

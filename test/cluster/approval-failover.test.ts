/**
 * A NATS cluster is the way past one machine. A real 3-node nats-server cluster with JetStream
 * (stream and run-store bucket with 3 replicas): while an agent waits on an approval, the node
 * it is connected to is killed (SIGKILL), then the stream leader; the clients fail over, nothing
 * is lost, the reviewer's decision is applied once and the tool runs once. And on one server:
 * killed (SIGKILL) and restarted with its store while the run waits, the decision given while it
 * was down is applied once.
 */

import { remoteReviewer, serveReviewer } from '@signalbox/actors'
import { connectNatsBus, type NatsBus, type NatsBusOptions } from '@signalbox/actors/nats'
import { KvRunStore } from '@signalbox/actors/store'
import {
  type ApprovalDecision,
  type ApprovalRequest,
  type AuditEntry,
  createAgent,
  MemoryAuditLog,
  type Reviewer,
  tool,
} from '@signalbox/core'
import { createSubjects, type Subjects } from '@signalbox/core/bus'
import { ScriptedProvider, sampleCheckpoint } from '@signalbox/core/testing'
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest'
import { z } from 'zod'
import { uniquePrefix } from '../support/env.ts'
import { eventually } from '../support/eventually.ts'
import { type NatsCluster, startNatsCluster } from '../support/nats-cluster.ts'
import { type NatsServer, startNatsServer } from '../support/nats-server.ts'

const signal = () => AbortSignal.timeout(15_000)

/** What the test reads of `$JS.API.STREAM.INFO`. */
interface StreamInfo {
  config: { num_replicas: number }
  cluster?: { leader?: string; replicas?: { name: string; current: boolean }[] }
}

/** `promise`, or a failure naming `what` (and `context`, read then) after `timeoutMs`. */
async function within<T>(promise: Promise<T>, timeoutMs: number, what: string, context?: () => string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}${context ? ` (${context()})` : ''}`)), timeoutMs)
  })
  try {
    return await Promise.race([promise, late])
  } finally {
    clearTimeout(timer)
  }
}

/** A person who decides only when told to (`release`), after the faults. */
function gatedReviewer(name: string) {
  let release: () => void = () => {}
  const released = new Promise<void>((resolve) => {
    release = resolve
  })
  const reviewer: Reviewer = {
    async review(request: ApprovalRequest): Promise<ApprovalDecision> {
      await released
      return {
        requestId: request.requestId,
        callId: request.callId,
        digest: request.digest,
        approved: true,
        reviewer: name,
        decidedAt: Date.now(),
      }
    },
  }
  return { reviewer, release }
}

/** An agent that pays once approved, its reviewer service elsewhere on the bus, and their buses. */
async function paymentWorld(servers: string[], durable: NatsBusOptions['durable']) {
  const prefix = uniquePrefix()
  const subjects: Subjects = createSubjects(prefix)
  const buses: NatsBus[] = []
  const cleanups: (() => unknown)[] = []
  const handlerErrors: unknown[] = []
  /** What each bus reported (a consumer retrying, a publish failing), for a failure's message. */
  const busErrors: string[] = []
  onTestFinished(async () => {
    for (const cleanup of cleanups.reverse())
      await Promise.resolve()
        .then(cleanup)
        .catch(() => {})
    await Promise.allSettled(buses.map((bus) => bus.close()))
  })
  const open = async (name: string) => {
    const bus = await connectNatsBus({
      servers,
      prefix,
      name: `${name}-${prefix}`,
      ...(durable ? { durable } : {}),
      reconnectTimeWaitMs: 100,
      publishAttemptTimeoutMs: 1_000,
      drainTimeoutMs: 500,
      pingIntervalMs: 1_000,
      onHandlerError: (error) => handlerErrors.push(error),
    })
    buses.push(bus)
    bus.onStatus((status) => {
      if (status.type === 'error') busErrors.push(`${name}: ${status.error.message}`)
    })
    return bus
  }
  const agentBus = await open('agent')
  const audit = new MemoryAuditLog()
  const reviewer = remoteReviewer({ bus: agentBus, subjects, audit })
  cleanups.push(() => reviewer.close())
  const paid: { to: string; amount: number }[] = []
  const pay = tool({
    name: 'pay',
    description: 'Pay someone. Irreversible.',
    schema: z.object({ to: z.string(), amount: z.number() }),
    needsApproval: true,
    execute: (args) => {
      paid.push(args)
      return `paid ${args.amount} to ${args.to}`
    },
  })
  const agent = createAgent({
    id: 'payer',
    provider: new ScriptedProvider({
      script: [{ toolCalls: [{ id: 'call_pay', name: 'pay', arguments: { to: 'bob', amount: 42 } }] }, { content: 'done' }],
    }),
    tools: [pay],
    reviewer,
    audit,
    approvalTimeoutMs: 120_000,
  })
  const reviewerBus = await open('reviewer')
  const person = gatedReviewer('ops')
  const seen: ApprovalRequest[] = []
  const service = serveReviewer({
    bus: reviewerBus,
    subjects,
    reviewer: person.reviewer,
    onRequest: (request) => seen.push(request),
  })
  cleanups.push(() => service.close())
  await service.ready
  const admin = await open('admin')
  /** Messages stored on `subject`, asked through the cluster. */
  const stored = async (subject: string) => {
    const info = await (await admin.manager()).streams.info(admin.streamName, { subjects_filter: subject })
    return info.state.subjects?.[subject] ?? 0
  }
  const entries = (kind: AuditEntry['kind']) => audit.entries.filter((entry) => entry.kind === kind)
  return {
    audit,
    handlerErrors,
    busErrors,
    prefix,
    subjects,
    agent,
    agentBus,
    reviewerBus,
    admin,
    person,
    seen,
    paid,
    stored,
    entries,
  }
}

describe('a 3-node JetStream cluster', () => {
  let cluster: NatsCluster
  beforeAll(async () => {
    cluster = await startNatsCluster()
  }, 60_000)
  afterAll(async () => {
    await cluster?.dispose()
  })

  it('the agent’s node and then the stream leader die while an approval waits: decided once, paid once', async () => {
    const w = await paymentWorld(cluster.urls, { replicas: 3 })
    const store = new KvRunStore({
      connection: w.agentBus.connection,
      bucket: `runs_${w.prefix.replace(/\W/g, '_')}`,
      replicas: 3,
    })
    onTestFinished(async () => {
      await w.admin.connection.request(`$JS.API.STREAM.DELETE.KV_${store.bucket}`).catch(() => {})
    })
    await store.create(sampleCheckpoint({ runId: 'run_parked', lease: { owner: 'host-a', epoch: 1, expiresAt: 1 } }), {
      signal: signal(),
    })
    // Asked with a short timeout: while the stream has no leader nobody answers, and the client's
    // default (5 s) would make each poll below wait that long after a leader was elected.
    const streamInfo = async (): Promise<StreamInfo> => {
      const reply = await w.admin.connection.request(`$JS.API.STREAM.INFO.${w.admin.streamName}`, '', { timeout: 1_000 })
      const info = reply.json<StreamInfo & { error?: { description: string } }>()
      if (info.error) throw new Error(info.error.description)
      return info
    }
    expect((await streamInfo()).config.num_replicas).toBe(3)

    const handle = w.agent.start('pay bob 42')
    await eventually(() => w.seen.length === 1, 15_000, 'the reviewer to be shown the request')

    // 1. The node the agent is connected to.
    const agentNode = cluster.node(w.agentBus.connection.info?.server_name as string)
    await agentNode.kill()
    await eventually(
      () => w.agentBus.connection.info?.server_name !== agentNode.name && !w.agentBus.connection.isClosed(),
      15_000,
      'the agent to fail over',
    )
    await eventually(async () => (await streamInfo()).cluster?.leader, 20_000, 'a stream leader')
    // Back, and caught up, so that losing the leader next still leaves a quorum.
    await agentNode.restart()
    await eventually(
      async () => {
        const info = await streamInfo()
        return (
          info.cluster?.leader && (info.cluster.replicas ?? []).length === 2 && info.cluster.replicas?.every((r) => r.current)
        )
      },
      30_000,
      'all replicas to be current',
    )

    // 2. The stream leader.
    const leader = cluster.node((await streamInfo()).cluster?.leader as string)
    await leader.kill()
    await eventually(
      async () => {
        const info = await streamInfo()
        return info.cluster?.leader !== undefined && info.cluster.leader !== leader.name
      },
      30_000,
      'a new stream leader',
    )
    // ...and every consumer on it (the agent's decisions, the reviewer's requests), each its own
    // Raft group: on a loaded machine their elections can outlast the stream's, and the window
    // below is for the decision's path, not for elections.
    await eventually(
      async () => {
        const consumers = []
        for await (const consumer of (await w.admin.manager()).consumers.list(w.admin.streamName)) consumers.push(consumer)
        return consumers.length > 0 && consumers.every((c) => c.cluster?.leader !== undefined && c.cluster.leader !== leader.name)
      },
      30_000,
      'a leader for every consumer',
    )

    // The person decides after both losses.
    w.person.release()
    const result = await within(
      handle.result,
      20_000,
      'the decision to be applied after both losses',
      () => `bus errors: ${JSON.stringify(w.busErrors)}; handler errors: ${w.handlerErrors.map(String).join('; ')}`,
    )
    expect(result.output).toBe('done')
    expect(w.paid).toEqual([{ to: 'bob', amount: 42 }])
    await leader.restart()
    // Everyone settled: a redelivered decision would be applied (or rejected) by now.
    await Promise.all([w.agentBus.flush(), w.reviewerBus.flush()])
    await new Promise((resolve) => setTimeout(resolve, 500))
    expect(w.paid).toHaveLength(1)
    expect(w.entries('approval.granted')).toMatchObject([{ actor: 'ops', toolName: 'pay', callId: 'call_pay' }])
    expect(w.entries('approval.rejected')).toEqual([])
    expect(w.entries('approval.timeout')).toEqual([])
    expect(await w.stored(w.subjects.approvals('payer'))).toBe(1)
    expect(await w.stored(w.subjects.approvalDecisions('payer'))).toBe(1)
    expect(w.seen).toHaveLength(1)

    // The run store's bucket kept its run through both losses, and its compare-and-set still holds.
    const loaded = await store.load('run_parked', { signal: signal() })
    expect(loaded?.checkpoint.lease?.owner).toBe('host-a')
    const taken = await store.claim('run_parked', { owner: 'host-b', leaseMs: 60_000, signal: signal() })
    expect(taken.checkpoint.lease).toMatchObject({ owner: 'host-b', epoch: 2 })
    await expect(
      store.save(loaded?.checkpoint as never, { revision: loaded?.revision as number, signal: signal() }),
    ).rejects.toMatchObject({ code: 'RUN_REVISION_CONFLICT' })
  }, 150_000) // above the sum of its steps' limits: a stall fails the step that waited, saying which
})

describe('one server, killed and restarted with its store', () => {
  let server: NatsServer
  beforeAll(async () => {
    server = await startNatsServer()
  })
  afterAll(async () => {
    await server?.dispose()
  })

  it('SIGKILL while the run waits; the person decides while the server is down: applied once, paid once', async () => {
    const w = await paymentWorld([server.url], undefined)
    const handle = w.agent.start('pay bob 42')
    await eventually(() => w.seen.length === 1, 10_000, 'the reviewer to be shown the request')

    await server.kill()
    // Decided while nothing can store it: the reviewer service keeps the decision until the server is back.
    w.person.release()
    await new Promise((resolve) => setTimeout(resolve, 500))
    await server.restart()

    const result = await handle.result
    expect(result.output).toBe('done')
    await Promise.all([w.agentBus.flush(), w.reviewerBus.flush()])
    await new Promise((resolve) => setTimeout(resolve, 500))
    expect(w.paid).toEqual([{ to: 'bob', amount: 42 }])
    expect(w.entries('approval.granted')).toMatchObject([{ actor: 'ops' }])
    expect(w.entries('approval.rejected')).toEqual([])
    expect(await w.stored(w.subjects.approvals('payer'))).toBe(1)
    expect(await w.stored(w.subjects.approvalDecisions('payer'))).toBe(1)
  }, 60_000)
})

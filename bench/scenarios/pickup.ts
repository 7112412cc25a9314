/**
 * How soon pending approval work is picked up again after a fault, on a private
 * nats-server (spawned on a free port, killed by pid).
 * - Reviewer `kill -9`: a reviewer process holds N requests (deciding, not yet decided) and is
 *   killed; a replacement reviewer (approves at once) is already running. Pick-up: from the kill
 *   to the agent holding each decision.
 * - Server restart: N requests are decided 0-1.5 s after they arrive while the server is killed
 *   (SIGKILL) and restarted with its store. Lateness: from the moment each decision was made to
 *   the moment the agent holds it; the restart's own downtime is reported beside it.
 * Before the transport's 5 s `ack_wait` with in-progress acks, both were about 30 s.
 */
import { randomUUID } from 'node:crypto'
import { remoteReviewer, serveReviewer } from '@signalbox/actors'
import { connectNatsBus, type NatsBus } from '@signalbox/actors/nats'
import type { ApprovalDecision, ApprovalRequest, Reviewer } from '@signalbox/core'
import { createSubjects } from '@signalbox/core/bus'
import { callDigest } from '@signalbox/core/protocol'
import { startCrashChild } from '../../test/support/crash-harness.ts'
import { startNatsServer } from '../../test/support/nats-server.ts'

export interface PickupRow {
  fault: string
  requests: number
  medianMs: number
  maxMs: number
  /** Server downtime (restart) or 0. */
  downtimeMs: number
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

function request(i: number): ApprovalRequest {
  const args = { invoice: `P-${i}` }
  const now = Date.now()
  return {
    requestId: `request_${randomUUID()}`,
    agentId: 'bench',
    runId: 'run_pickup',
    runPath: [],
    callId: `call_${i}`,
    toolName: 'pay_invoice',
    arguments: args,
    digest: callDigest('pay_invoice', args),
    deadline: now + 300_000,
    requestedAt: now,
  }
}

function approve(request: ApprovalRequest, reviewer: string): ApprovalDecision {
  const { requestId, callId, digest } = request
  return { requestId, callId, digest, approved: true, reviewer, decidedAt: Date.now() }
}

function summary(fault: string, samples: number[], downtimeMs: number): PickupRow {
  const sorted = [...samples].sort((a, b) => a - b)
  return {
    fault,
    requests: sorted.length,
    medianMs: sorted[Math.floor(sorted.length / 2)] as number,
    maxMs: sorted.at(-1) as number,
    downtimeMs,
  }
}

const busOptions = (servers: string, prefix: string, name: string) => ({
  servers,
  prefix,
  name,
  reconnectTimeWaitMs: 100,
  publishAttemptTimeoutMs: 1_000,
  drainTimeoutMs: 500,
  durable: { storage: 'file' as const },
})

export async function pickupScenario(count: number): Promise<PickupRow[]> {
  const server = await startNatsServer()
  try {
    return [await reviewerKill(server.url, count), await serverRestart(server, count)]
  } finally {
    await server.dispose()
  }
}

async function reviewerKill(url: string, count: number): Promise<PickupRow> {
  const prefix = `pickup${randomUUID().slice(0, 8)}.v1`
  const subjects = createSubjects(prefix)
  const buses: NatsBus[] = []
  try {
    const agentBus = await connectNatsBus(busOptions(url, prefix, 'pickup-agent'))
    buses.push(agentBus)
    const holder = await startCrashChild('bench/lib/holding-reviewer-child.ts', { args: [url, prefix], ready: 'ready' })
    const agent = remoteReviewer({ bus: agentBus, subjects })
    const decided = new Map<string, number>()
    const all = Array.from({ length: count }, (_, i) => request(i))
    const waits = all.map((r) =>
      agent.review(r, { signal: new AbortController().signal }).then(() => {
        decided.set(r.requestId, Date.now())
      }),
    )
    await holder.waitForLine(new RegExp(`^held ${count}$`, 'm'), 30_000)
    // The replacement runs already (a second member of the same group): it gets nothing until the holder is gone.
    const replacementBus = await connectNatsBus(busOptions(url, prefix, 'pickup-replacement'))
    buses.push(replacementBus)
    const replacement = serveReviewer({
      bus: replacementBus,
      subjects,
      reviewer: { review: async (r) => approve(r, 'replacement') } satisfies Reviewer,
    })
    await replacement.ready
    await sleep(200)
    const killedAt = Date.now()
    await holder.kill('SIGKILL')
    await Promise.all(waits)
    replacement.close()
    agent.close()
    return summary(
      'reviewer kill -9',
      [...decided.values()].map((at) => at - killedAt),
      0,
    )
  } finally {
    await Promise.allSettled(buses.map((bus) => bus.close()))
  }
}

async function serverRestart(server: Awaited<ReturnType<typeof startNatsServer>>, count: number): Promise<PickupRow> {
  const prefix = `pickup${randomUUID().slice(0, 8)}.v1`
  const subjects = createSubjects(prefix)
  const buses: NatsBus[] = []
  try {
    const agentBus = await connectNatsBus(busOptions(server.url, prefix, 'restart-agent'))
    const reviewerBus = await connectNatsBus(busOptions(server.url, prefix, 'restart-reviewer'))
    buses.push(agentBus, reviewerBus)
    const madeAt = new Map<string, number>()
    const service = serveReviewer({
      bus: reviewerBus,
      subjects,
      // People answer within 1.5 s of seeing a request.
      reviewer: {
        review: async (r) => {
          await sleep(Math.random() * 1_500)
          madeAt.set(r.requestId, Date.now())
          return approve(r, 'person')
        },
      } satisfies Reviewer,
    })
    await service.ready
    const agent = remoteReviewer({ bus: agentBus, subjects })
    const lateness: number[] = []
    const all = Array.from({ length: count }, (_, i) => request(i))
    const waits = all.map((r) =>
      agent.review(r, { signal: new AbortController().signal }).then(() => {
        lateness.push(Date.now() - (madeAt.get(r.requestId) ?? Date.now()))
      }),
    )
    await sleep(500)
    const down = Date.now()
    await server.kill()
    await server.restart()
    const downtimeMs = Date.now() - down
    await Promise.all(waits)
    service.close()
    agent.close()
    return summary('server kill -9 + restart', lateness, downtimeMs)
  } finally {
    await Promise.allSettled(buses.map((bus) => bus.close()))
  }
}

export function renderPickup(rows: PickupRow[]): string {
  return [
    'fault                        requests   median ms     max ms   server down ms',
    ...rows.map(
      (r) =>
        `${r.fault.padEnd(27)}  ${String(r.requests).padStart(8)}  ${r.medianMs.toFixed(0).padStart(10)}  ${r.maxMs.toFixed(0).padStart(9)}  ${String(r.downtimeMs).padStart(15)}`,
    ),
  ].join('\n')
}

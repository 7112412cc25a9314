/**
 * How long a remote approval takes, end to end, against a bare NATS request/reply
 * measured in the same run on the same server. The approval goes the durable way it goes in
 * production: the agent's bus reviewer publishes the request to JetStream, a reviewer service
 * (here a policy that approves at once) consumes it and stores its decision in JetStream, and
 * the agent's consumer hands the decision back. Needs a NATS server with JetStream
 * (SIGNALBOX_NATS_URL, default nats://127.0.0.1:4222).
 */
import { randomUUID } from 'node:crypto'
import { remoteReviewer, serveReviewer } from '@signalbox/actors'
import { connectNatsBus } from '@signalbox/actors/nats'
import { type ApprovalRequest, policyReviewer } from '@signalbox/core'
import { createSubjects } from '@signalbox/core/bus'
import { callDigest } from '@signalbox/core/protocol'

export interface LatencyRow {
  label: string
  medianUs: number
  p99Us: number
  samples: number
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number
}

function row(label: string, samplesUs: number[]): LatencyRow {
  const sorted = [...samplesUs].sort((a, b) => a - b)
  return { label, medianUs: percentile(sorted, 50), p99Us: percentile(sorted, 99), samples: sorted.length }
}

export async function approvalLatencyScenario(count: number): Promise<LatencyRow[]> {
  const servers = process.env.SIGNALBOX_NATS_URL ?? 'nats://127.0.0.1:4222'
  const prefix = `bench${randomUUID().slice(0, 8)}.v1`
  const subjects = createSubjects(prefix)
  // Two connections, as in production: the agent's process and the reviewer's.
  const agentBus = await connectNatsBus({ servers, prefix, name: 'bench-agent' })
  const reviewerBus = await connectNatsBus({ servers, prefix, name: 'bench-reviewer' })
  try {
    // Bare request/reply between the same two connections.
    const echo = reviewerBus.subscribe(`${prefix}.echo`, (message) => {
      message.respond(message.data)
    })
    await echo.ready
    const payload = new TextEncoder().encode(JSON.stringify({ v: 1, type: 'ping', at: 0 }))
    const bare: number[] = []
    for (let i = 0; i < count + 50; i++) {
      const started = process.hrtime.bigint()
      await agentBus.request(`${prefix}.echo`, payload, { timeoutMs: 5_000 })
      if (i >= 50) bare.push(Number(process.hrtime.bigint() - started) / 1_000)
    }

    const service = serveReviewer({ bus: reviewerBus, subjects, reviewer: policyReviewer(() => true, { name: 'bench' }) })
    await service.ready
    const reviewer = remoteReviewer({ bus: agentBus, subjects })
    const approval: number[] = []
    for (let i = 0; i < count + 20; i++) {
      const args = { invoice: `A-${i}`, amount: i }
      const request: ApprovalRequest = {
        requestId: `request_${randomUUID()}`,
        agentId: 'bench',
        runId: 'run_bench',
        runPath: [],
        callId: `call_${i}`,
        toolName: 'pay',
        arguments: args,
        digest: callDigest('pay', args),
        deadline: Date.now() + 60_000,
        requestedAt: Date.now(),
      }
      const started = process.hrtime.bigint()
      const decision = await reviewer.review(request, { signal: AbortSignal.timeout(10_000) })
      if (!decision.approved) throw new Error('the bench reviewer should approve')
      if (i >= 20) approval.push(Number(process.hrtime.bigint() - started) / 1_000)
    }
    service.close()
    reviewer.close()
    echo.unsubscribe()
    return [row('bare NATS request/reply', bare), row('approval round trip (JetStream both ways)', approval)]
  } finally {
    await agentBus.connection.request(`$JS.API.STREAM.DELETE.${agentBus.streamName}`, '', { timeout: 2_000 }).catch(() => {})
    await agentBus.close()
    await reviewerBus.close()
  }
}

export function renderLatency(rows: LatencyRow[]): string {
  const base = rows[0] as LatencyRow
  const lines = [
    'variant                                     median µs    p99 µs   × bare (median)  samples',
    ...rows.map(
      (r) =>
        `${r.label.padEnd(42)}  ${r.medianUs.toFixed(0).padStart(9)}  ${r.p99Us.toFixed(0).padStart(8)}  ${`${(r.medianUs / base.medianUs).toFixed(1)}x`.padStart(15)}  ${String(r.samples).padStart(7)}`,
    ),
  ]
  return lines.join('\n')
}

/**
 * `--replicas 3` on a 3-node nats-server cluster: every bucket and stream a deployment's processes
 * create when missing is created in three copies. `signalbox host`: the deployment's stream, the
 * run bucket and the directory bucket; `signalbox tools serve --trust`: the used-approval bucket of
 * the enforcing tool hosts (created at the first gated call). Without the flag they are R1, so a
 * node's loss stops what lived only there.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { connectNatsBus, type NatsBus } from '@signalbox/actors/nats'
import { createSigner, newUserSeed } from '@signalbox/actors/trust'
import { decideApproval } from '@signalbox/core'
import { createSubjects, directoryBucket, usedApprovalsBucket } from '@signalbox/core/bus'
import { callDigest, encodeMessage, type ToolCallMessage } from '@signalbox/core/protocol'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { cleanupAll, FIXTURES, ROOT, startProcess } from '../cli/support.ts'
import { type NatsCluster, startNatsCluster } from '../support/nats-cluster.ts'

let cluster: NatsCluster
let dir: string
const buses: NatsBus[] = []

beforeAll(async () => {
  cluster = await startNatsCluster()
  dir = await mkdtemp(path.join(os.tmpdir(), 'signalbox-replicas-'))
}, 60_000)
afterAll(async () => {
  await cleanupAll()
  for (const bus of buses) await bus.close()
  await cluster?.dispose()
  await rm(dir, { recursive: true, force: true })
})

/**
 * The replicas of a stream, as the cluster reports them, once it exists. A host creates its run
 * bucket at its first use of the store (its takeover scan starts after "hosting"), and a
 * clustered stream's info comes from its leader, elected after the stream is made: asked too soon,
 * the answer is an error ("stream not found", no leader yet) or none. Asked again until it names
 * the stream's replicas; a failure says what the last answer was.
 */
async function replicasOf(bus: NatsBus, stream: string): Promise<number> {
  return (await streamInfo(bus, stream, (info) => info.config?.num_replicas)) as number
}

/** Whether the cluster says there is no such stream (asked again while it gives no clear answer). */
async function isMissing(bus: NatsBus, stream: string): Promise<boolean> {
  return await streamInfo(bus, stream, (info) =>
    info.config !== undefined ? false : info.error?.err_code === STREAM_NOT_FOUND ? true : undefined,
  )
}

/** JetStream's error code for "stream not found". */
const STREAM_NOT_FOUND = 10059

interface StreamInfoReply {
  config?: { num_replicas: number }
  error?: { err_code?: number; description?: string }
}

/** `STREAM.INFO` asked until `read` makes something of the answer; a failure says what the last answer was. */
async function streamInfo<T>(bus: NatsBus, stream: string, read: (info: StreamInfoReply) => T | undefined): Promise<T> {
  const deadline = Date.now() + 45_000
  let last = 'no answer'
  for (;;) {
    try {
      const reply = await bus.connection.request(`$JS.API.STREAM.INFO.${stream}`, '', { timeout: 5_000 })
      const info = reply.json() as StreamInfoReply
      const value = read(info)
      if (value !== undefined) return value
      last = info.error?.description ?? JSON.stringify(info)
    } catch (error) {
      if ((error as Error).name !== 'TimeoutError') throw error
      last = 'unanswered for 5 s'
    }
    if (Date.now() > deadline) throw new Error(`STREAM.INFO ${stream}: ${last}`)
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
}

async function observer(prefix: string): Promise<NatsBus> {
  const bus = await connectNatsBus({ servers: cluster.urls, prefix, name: 'observer', durable: { access: 'check' } })
  buses.push(bus)
  return bus
}

describe('--replicas on a 3-node cluster', () => {
  it('signalbox host --replicas 3: the stream, the run bucket and the directory bucket are created R3', async () => {
    const prefix = 'replicas.v1'
    const host = startProcess([
      'host',
      path.join(ROOT, 'test/cluster/fixtures/worker-module.ts'),
      '--scripted',
      ...['--nats', cluster.urls.join(','), '--prefix', prefix],
      ...['--host-id', 'host-1', '--run-bucket', 'replicas_runs', '--replicas', '3'],
    ])
    await host.waitFor(/hosting 1 agent/, 60_000)
    const bus = await observer(prefix)
    expect({
      stream: await replicasOf(bus, bus.streamName),
      runs: await replicasOf(bus, 'KV_replicas_runs'),
      directory: await replicasOf(bus, `KV_${directoryBucket(prefix)}`),
    }).toEqual({ stream: 3, runs: 3, directory: 3 })
    await host.stop('SIGTERM')
  }, 90_000)

  it('signalbox tools serve --trust --replicas 3: the used-approval bucket is created R3 at the first gated call', async () => {
    const prefix = 'ledger.v1'
    const tina = createSigner(newUserSeed())
    const trustFile = path.join(dir, 'trust.json')
    await writeFile(trustFile, JSON.stringify({ keys: { [tina.publicKey]: 'tina' }, reviewers: { drop_claw: [tina.publicKey] } }))
    const tools = startProcess(
      [
        ...['tools', 'serve', path.join(FIXTURES, 'claw-tools.ts'), '--approve', 'drop_claw', '--trust', trustFile],
        ...['--nats', cluster.urls.join(','), '--prefix', prefix, '--replicas', '3'],
      ],
      { env: { CLAW_DROPS: path.join(dir, 'drops.log') } },
    )
    await tools.waitFor(/serving 2 tools/, 60_000)
    const bus = await observer(prefix)
    const ledger = `KV_${usedApprovalsBucket(prefix)}`
    expect(await isMissing(bus, ledger)).toBe(true)

    // A reviewer's signed approval of exactly this call, as the agent would send it.
    const now = Date.now()
    const args = { bin: 2 }
    const request = {
      requestId: 'request-1',
      agentId: 'claw',
      runId: 'run-1',
      runPath: [],
      callId: 'call-1',
      toolName: 'drop_claw',
      arguments: args,
      digest: callDigest('drop_claw', args),
      deadline: now + 60_000,
      requestedAt: now,
    }
    const approval = tina.sign({ v: 1, type: 'approval.decision', ...decideApproval(request, true, 'tina', now) })
    const call: ToolCallMessage = {
      v: 1,
      type: 'tool.call',
      callId: 'call-1',
      toolName: 'drop_claw',
      agentId: 'claw',
      runId: 'run-1',
      arguments: args,
      deadline: now + 60_000,
      approval: approval as unknown as Record<string, unknown>,
    }
    const reply = await bus.request(createSubjects(prefix).tool('drop_claw'), encodeMessage(call), {
      timeoutMs: 30_000,
      headers: { 'Signalbox-Idempotency-Key': 'run-1:call-1' },
    })
    expect(JSON.parse(new TextDecoder().decode(reply.data))).toMatchObject({ type: 'tool.result', output: 'dropped into bin 2' })
    expect({ stream: await replicasOf(bus, bus.streamName), ledger: await replicasOf(bus, ledger) }).toEqual({
      stream: 3,
      ledger: 3,
    })
    await tools.stop('SIGTERM')
  }, 90_000)
})

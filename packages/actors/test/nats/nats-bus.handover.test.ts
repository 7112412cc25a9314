/**
 * How fast a shared durable consumer's work moves on when the member holding it goes away.
 * The server's `ack_wait` is short (5 s by default) and kept alive with in-progress acks while the
 * holder lives, so a holder killed mid-message hands it over within seconds (not the 30 s of a
 * long ack_wait); an orderly `close()` hands it back at once with a nak. Nothing acknowledged is
 * delivered again. Real processes and connections on the shared nats-server.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { jetstreamManager } from '@nats-io/jetstream'
import { connect, type NatsConnection } from '@nats-io/transport-node'
import { connectNatsBus, type NatsBus, type NatsBusOptions } from '@signalbox/actors/nats'
import { createSubjects, type DurableMessage } from '@signalbox/core/bus'
import { afterAll, afterEach, beforeAll, describe, expect, it, onTestFinished } from 'vitest'
import { tsScript } from '../../../../test/support/built.ts'
import { NATS_URL, uniquePrefix } from '../../../../test/support/env.ts'
import { eventually, sleep } from './helpers.ts'

const here = path.dirname(fileURLToPath(import.meta.url))
const repoRoot = path.resolve(here, '../../../..')

let admin: NatsConnection
const opened: NatsBus[] = []
beforeAll(async () => {
  admin = await connect({ servers: NATS_URL, name: 'nats-bus-handover-admin' })
})
afterEach(async () => {
  const jsm = await jetstreamManager(admin)
  for (const bus of opened.splice(0)) {
    await bus.close()
    await jsm.streams.delete(bus.streamName).catch(() => {})
  }
})
afterAll(async () => {
  await admin?.close()
})

async function open(prefix: string, options: Partial<NatsBusOptions> = {}): Promise<NatsBus> {
  const bus = await connectNatsBus({ servers: NATS_URL, prefix, name: 'handover', ...options })
  opened.push(bus)
  return bus
}

/** Records what a member's handler got, by msgId. */
function recorder() {
  const got: string[] = []
  const held: DurableMessage[] = []
  return { got, held, id: (message: DurableMessage) => message.headers?.['Nats-Msg-Id'] ?? '?' }
}

describe('NatsBus durable hand-over', () => {
  it('a member killed while holding a message: another member gets it within seconds, and nothing acknowledged comes back', {
    timeout: 60_000,
  }, async () => {
    const prefix = uniquePrefix()
    const subject = createSubjects(prefix).audit('agent-1', 'entry')
    const bus = await open(prefix)
    const holder = await spawnHolder({ prefix, subject, durable: 'workers', hold: 'm4' })

    const seqs: number[] = []
    for (const id of ['m1', 'm2', 'm3', 'm4']) seqs.push((await bus.durablePublish(subject, id, { msgId: id })).seq)
    await eventually(() => holder.output().includes('holding m4'), 'the holder to take m4', 10_000)
    // m1..m3 are acknowledged on the server before the holder dies.
    const jsm = await bus.manager()
    const ackFloor = async () => (await jsm.consumers.info(bus.streamName, 'workers')).ack_floor.stream_seq
    for (let floor = await ackFloor(); floor < (seqs[2] as number); floor = await ackFloor()) await sleep(50)

    const { got, id } = recorder()
    const replacement = bus.durableConsume(
      subject,
      (message) => {
        got.push(id(message))
        message.ack()
      },
      { durableName: 'workers', ackWaitMs: 60_000 },
    )
    await replacement.ready
    // Past the server's 5 s ack_wait: the live holder's in-progress acks keep m4 with it.
    await sleep(6_500)
    expect(got).toEqual([])

    const killedAt = Date.now()
    holder.kill()
    await eventually(() => got.includes('m4'), 'm4 to reach the replacement', 40_000)
    const handedOverMs = Date.now() - killedAt
    expect(handedOverMs).toBeLessThan(15_000)

    await bus.durablePublish(subject, 'm5', { msgId: 'm5' })
    await eventually(() => got.includes('m5'), 'm5 to reach the replacement', 10_000)
    expect(got).toEqual(['m4', 'm5'])
    expect(holder.output().match(/acked m\d/g)).toEqual(['acked m1', 'acked m2', 'acked m3'])
  })

  it('a member closing in order hands back what it holds at once (nak), long before the ack wait', {
    timeout: 60_000,
  }, async () => {
    const prefix = uniquePrefix()
    const subject = createSubjects(prefix).audit('agent-1', 'entry')
    // A long server ack_wait: only the nak can explain a quick hand-over.
    const first = await open(prefix, { serverAckWaitMs: 30_000 })
    const second = await open(prefix, { serverAckWaitMs: 30_000 })

    const a = recorder()
    const holding = first.durableConsume(
      subject,
      (message) => {
        a.got.push(a.id(message))
        // Kept for later without settling it, as the request services do while a person decides.
        if (a.id(message) === 'm2') a.held.push(message)
        else message.ack()
      },
      { durableName: 'workers', ackWaitMs: 60_000 },
    )
    await holding.ready
    await first.durablePublish(subject, 'm1', { msgId: 'm1' })
    await first.durablePublish(subject, 'm2', { msgId: 'm2' })
    await eventually(() => a.held.length === 1, 'the first member to hold m2', 10_000)

    const b = recorder()
    const taking = second.durableConsume(
      subject,
      (message) => {
        b.got.push(b.id(message))
        message.ack()
      },
      { durableName: 'workers', ackWaitMs: 60_000 },
    )
    await taking.ready
    const closedAt = Date.now()
    await first.close()
    await eventually(() => b.got.includes('m2'), 'm2 to reach the second member', 40_000)
    expect(Date.now() - closedAt).toBeLessThan(10_000)

    await second.durablePublish(subject, 'm3', { msgId: 'm3' })
    await eventually(() => b.got.includes('m3'), 'm3 to reach the second member', 10_000)
    expect(a.got).toEqual(['m1', 'm2'])
    expect(b.got).toEqual(['m2', 'm3'])
  })
})

/** Starts `fixtures/durable-holder-process.ts`; resolves once its consumer is active. */
async function spawnHolder(options: { prefix: string; subject: string; durable: string; hold: string }) {
  // One process (`node --import <loader>`), not a CLI that runs the script in a grandchild a kill by pid would miss.
  const script = path.join(here, 'fixtures/durable-holder-process.ts')
  const child: ChildProcess = spawn(process.execPath, [...tsScript(script)], {
    cwd: repoRoot,
    env: {
      ...process.env,
      SBX_NATS_URL: NATS_URL,
      SBX_PREFIX: options.prefix,
      SBX_SUBJECT: options.subject,
      SBX_DURABLE: options.durable,
      SBX_HOLD: options.hold,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const kill = () => {
    if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) process.kill(child.pid, 'SIGKILL')
  }
  onTestFinished(kill)
  let output = ''
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString()
  })
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString()
  })
  let exited = false
  child.once('exit', () => {
    exited = true
  })
  await eventually(() => output.includes('ready\n') || exited, 'the holder process to start', 15_000)
  if (!output.includes('ready\n')) throw new Error(`the holder process exited:\n${output}`)
  return { kill, output: () => output }
}

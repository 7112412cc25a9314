/**
 * NATS-only behaviour of the bus (the shared contract is in the conformance suite): the durable
 * subject rules, consumer conflicts, stream setup, statuses, aborting a connect.
 */
import { jetstreamManager } from '@nats-io/jetstream'
import { connect, type NatsConnection } from '@nats-io/transport-node'
import { connectNatsBus, defaultStreamName, type NatsBus, type NatsBusOptions } from '@signalbox/actors/nats'
import { AbortedError } from '@signalbox/core'
import {
  type BusMessage,
  type BusStatus,
  createSubjects,
  DurableConsumerConflictError,
  DurableSubjectError,
  defaultDurableSubjects,
  InvalidSubjectError,
} from '@signalbox/core/bus'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { NATS_URL, uniquePrefix } from '../../../../test/support/env.ts'
import { freePort } from '../../../../test/support/nats-server.ts'
import { eventually } from './helpers.ts'

let admin: NatsConnection
const opened: NatsBus[] = []
beforeAll(async () => {
  admin = await connect({ servers: NATS_URL, name: 'nats-bus-test-admin' })
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

async function open(options: Partial<NatsBusOptions> = {}) {
  const prefix = options.prefix ?? uniquePrefix()
  const bus = await connectNatsBus({ servers: NATS_URL, prefix, ...options })
  opened.push(bus)
  return { bus, subjects: createSubjects(prefix), prefix }
}

async function consumerNames(stream: string): Promise<string[]> {
  const jsm = await jetstreamManager(admin)
  const found: string[] = []
  // nats-server 2.9 lists a consumer that is being deleted as null.
  for await (const info of jsm.consumers.list(stream)) if (info) found.push(info.name)
  return found.sort()
}

/** nats-server 2.9 sometimes fails a delete racing its own state write ("directory not empty"): retry. */
async function deleteConsumer(stream: string, name: string): Promise<void> {
  const jsm = await jetstreamManager(admin)
  for (let attempt = 0; ; attempt++) {
    try {
      await jsm.consumers.delete(stream, name)
      return
    } catch (error) {
      if (!(await consumerNames(stream)).includes(name)) return
      if (attempt === 10) throw error
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  }
}

describe('NatsBus', () => {
  it('creates the stream with the default durable subjects, named after the prefix', async () => {
    const { bus, prefix } = await open()
    expect(defaultStreamName('signalbox.v1')).toBe('SIGNALBOX')
    expect(bus.streamName).toBe(defaultStreamName(prefix))
    const info = await (await jetstreamManager(admin)).streams.info(bus.streamName)
    expect(info.config.subjects.sort()).toEqual(defaultDurableSubjects(prefix).sort())
    expect(info.config.subjects).toEqual(
      expect.arrayContaining([`${prefix}.approvals.>`, `${prefix}.audit.>`, `${prefix}.agents.*.steer`]),
    )
    expect(info.config.storage).toBe('file')
    expect(info.config.duplicate_window).toBe(120_000_000_000)
  })

  it('adds its subjects to an existing stream and keeps the ones already there', async () => {
    const { bus, prefix } = await open()
    const extra = `${prefix}.snapshots.>`
    const second = await open({ prefix, durable: { subjects: [`${prefix}.audit.>`, extra] } })
    expect(second.bus.streamName).toBe(bus.streamName)
    expect(second.bus.durableSubjects).toContain(extra)
    expect(second.bus.durableSubjects).toContain(`${prefix}.approvals.>`)
  })

  it('refuses durable calls outside the stream and plain ones inside it', async () => {
    const { bus, subjects } = await open()
    await expect(bus.durablePublish(subjects.events('a', 'x'), 'x', { msgId: '1' })).rejects.toBeInstanceOf(DurableSubjectError)
    expect(() => bus.durableConsume(subjects.tool('t'), () => {})).toThrow(DurableSubjectError)
    expect(() => bus.durableConsume(`${subjects.prefix}.>`, () => {})).toThrow(DurableSubjectError)
    // JetStream would store these without de-dup, and answer a request with its own publish ack.
    expect(() => bus.publish(subjects.approvals('a'), 'x')).toThrow(InvalidSubjectError)
    await expect(bus.request(subjects.ask('a'), 'x', { timeoutMs: 500 })).rejects.toBeInstanceOf(InvalidSubjectError)
  })

  it('lets plain subscribers watch a durable subject, without a reply subject to answer', async () => {
    const { bus, subjects } = await open()
    const got: BusMessage[] = []
    await bus.subscribe(subjects.steer('a'), (m) => void got.push(m)).ready
    await bus.durablePublish(subjects.steer('a'), 'go left', { msgId: 's1' })
    await eventually(() => got.length === 1, 'the durable message')
    expect(got[0]?.text()).toBe('go left')
    expect(got[0]?.reply).toBeUndefined()
  })

  it('rejects `ready` when a durable name is already used with another filter', async () => {
    const { bus, subjects } = await open()
    await bus.durableConsume(subjects.audit('a', 'x'), () => {}, { durableName: 'shared' }).ready
    const statuses: BusStatus[] = []
    bus.onStatus((s) => statuses.push(s))
    const conflicting = bus.durableConsume(subjects.audit('b', 'x'), () => {}, { durableName: 'shared' })
    await expect(conflicting.ready).rejects.toBeInstanceOf(DurableConsumerConflictError)
    expect(conflicting.closed).toBe(true)
    expect(statuses.some((s) => s.type === 'error' && s.error instanceof DurableConsumerConflictError)).toBe(true)
  })

  it('deletes a private consumer on unsubscribe and keeps a durable one', async () => {
    const { bus, subjects } = await open()
    const durable = bus.durableConsume(subjects.audit('a', 'x'), () => {}, { durableName: 'keeper' })
    const ephemeral = bus.durableConsume(subjects.audit('a', 'x'), () => {})
    await Promise.all([durable.ready, ephemeral.ready])
    const names = () => consumerNames(bus.streamName)
    expect(await names()).toHaveLength(2)
    durable.unsubscribe()
    ephemeral.unsubscribe()
    // The delete is asynchronous (unsubscribe() returns at once).
    let left = await names()
    for (let i = 0; i < 40 && left.length > 1; i++) {
      await new Promise((resolve) => setTimeout(resolve, 25))
      left = await names()
    }
    expect(left).toEqual(['keeper'])
  })

  it('recreates a private consumer the server lost, at the first message it had not seen', async () => {
    const { bus, subjects } = await open()
    const subject = subjects.answers('a')
    const got: string[] = []
    await bus.durableConsume(subject, (m) => {
      got.push(m.text())
      m.ack()
    }).ready
    await bus.durablePublish(subject, 'one', { msgId: 'one' })
    await eventually(() => got.length === 1, 'one')
    const [lost] = await consumerNames(bus.streamName)
    // E.g. the server restarted without it, or it passed its inactive threshold.
    await deleteConsumer(bus.streamName, lost as string)
    await bus.durablePublish(subject, 'two', { msgId: 'two' }) // published while there is no consumer
    await bus.durablePublish(subject, 'three', { msgId: 'three' })
    await eventually(() => got.length >= 3, 'two and three', 5_000)
    expect(got).toEqual(['one', 'two', 'three'])
  })

  it('reports closed to status listeners', async () => {
    const { bus } = await open()
    const statuses: string[] = []
    bus.onStatus((s) => statuses.push(s.type))
    await bus.close()
    await eventually(() => statuses.includes('closed'), 'closed status')
  })

  it('aborting connect while waiting for a server throws AbortedError', async () => {
    const port = await freePort() // nobody listens: waiting for the server, it would retry until the deadline
    const controller = new AbortController()
    setTimeout(() => controller.abort(), 300)
    const started = Date.now()
    await expect(
      connectNatsBus({ servers: `nats://127.0.0.1:${port}`, waitForServer: true, signal: controller.signal }),
    ).rejects.toBeInstanceOf(AbortedError)
    expect(Date.now() - started).toBeLessThan(2_000)
  })
})

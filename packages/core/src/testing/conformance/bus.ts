/**
 * The `Bus` contract, written once and run against every transport (the in-process bus and the
 * NATS bus in signalbox's own tests; yours with `describeBusConformance`). Each test gets a fresh
 * subject prefix, so on a shared server tests never see each other's messages, streams or consumers.
 *
 * Durable tests use `audit` subjects: they are in the default durable set on NATS.
 */
import { randomBytes } from 'node:crypto'
import { afterEach, describe } from 'vitest'
import type { Bus } from '../../bus/bus.ts'
import { createSubjects, type Subjects } from '../../bus/subjects.ts'
import { closeTests } from './bus/close.ts'
import { durableConsumerTests } from './bus/durable-consumers.ts'
import { durableLastTests } from './bus/durable-last.ts'
import { durablePublishTests } from './bus/durable-publish.ts'
import { publishSubscribeTests } from './bus/publish-subscribe.ts'
import { requestManyTests } from './bus/request-many.ts'
import { requestReplyTests } from './bus/request-reply.ts'

export interface BusUnderTest {
  bus: Bus
  cleanup(): Promise<void>
}

/** Builds a bus for one test; `prefix` is the test's own subject prefix (the NATS bus needs it for its stream). */
export type MakeBus = (context: { prefix: string }) => Promise<BusUnderTest>

/** A fresh subject prefix (`t<hex>.v1`) per test. */
function uniquePrefix(): string {
  return `t${randomBytes(6).toString('hex')}.v1`
}

/**
 * Defines vitest tests that hold a `Bus` implementation to the contract signalbox's own buses
 * meet (publish and subscribe, wildcards, queue groups, request and reply, durable streams,
 * acknowledgement and redelivery, limits, closing). Call it in a test file:
 *
 *   describeBusConformance('my bus', async ({ prefix }) => {
 *     const bus = await connectMyBus({ prefix })
 *     return { bus, cleanup: () => bus.close() }
 *   })
 */
export function describeBusConformance(name: string, makeBus: MakeBus): void {
  describe(`Bus conformance: ${name}`, () => {
    const cleanups: (() => Promise<void>)[] = []
    afterEach(async () => {
      for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
    })

    async function open(): Promise<{ bus: Bus; subjects: Subjects; agent: string }> {
      const prefix = uniquePrefix()
      const { bus, cleanup } = await makeBus({ prefix })
      cleanups.push(cleanup)
      return { bus, subjects: createSubjects(prefix), agent: `agent-${Math.random().toString(36).slice(2, 8)}` }
    }

    describe('publish/subscribe', () => publishSubscribeTests(open))
    describe('request/reply', () => requestReplyTests(open))
    describe('request-many (scatter-gather)', () => requestManyTests(open))
    describe('durable path', () => {
      durablePublishTests(open)
      durableConsumerTests(open)
      durableLastTests(open)
    })
    describe('close()', () => closeTests(open))
  })
}

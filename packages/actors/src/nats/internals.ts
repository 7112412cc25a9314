/** The part of the bus its messages and consumers use (not public API). */
import type { JetStreamClient, JetStreamManager, JsMsg } from '@nats-io/jetstream'
import type { NatsConnection } from '@nats-io/transport-node'
import type { BusHeaders } from '@signalbox/core/bus'
import type { NatsDurableConsumer } from './durable-consumer.ts'

export interface BusInternals {
  connection(): NatsConnection
  streamName(): string
  js(): JetStreamClient
  manager(): Promise<JetStreamManager>
  /** Publishes a reply after the size check. */
  respond(subject: string, data: Uint8Array | string, headers: BusHeaders | undefined): void
  ack(msg: JsMsg, ackWaitMs: number): void
  report(error: unknown, subject: string, subscription: string, durable: boolean): void
  emitError(error: Error): void
  forget(consumer: NatsDurableConsumer): void
  pause(ms: number): Promise<void>
}

/**
 * Shared test settings. A nats-server with JetStream runs on every test machine at
 * 127.0.0.1:4222; tests that need to stop or restart a server spawn their own
 * (`./nats-server.ts`) instead of touching the shared one.
 */
import { randomBytes } from 'node:crypto'

export const NATS_URL = process.env.SIGNALBOX_NATS_URL ?? 'nats://127.0.0.1:4222'

/**
 * A fresh subject prefix (`t<hex>.v1`) so tests on the shared server never see each other's
 * messages, streams or consumers.
 */
export function uniquePrefix(): string {
  return `t${randomBytes(6).toString('hex')}.v1`
}

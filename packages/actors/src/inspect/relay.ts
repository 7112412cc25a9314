/**
 * The relay behind `signalbox inspect`: subscribes to every runtime's inspection subject
 * (`<prefix>.inspect.*`), serves the Stately bridge page (`createInspectorServer`) and forwards each
 * event to it through a WebSocket client, exactly like an inspected Node app would. It can also
 * append the stream to a JSONL file: the record works without internet, the hosted UI does not.
 */
import { once } from 'node:events'
import { createWriteStream, type WriteStream } from 'node:fs'
import { type Bus, createSubjects, type Subjects } from '@signalbox/core/bus'
import { type InspectorWireEvent, isInspectorWireEvent } from './convert.ts'
import { createWebSocketSender } from './local.ts'
import { startBridgeServer } from './server.ts'

export interface InspectionRelayOptions {
  bus: Bus
  subjects?: Subjects
  /** Port of the bridge page and its WebSocket. Default 8080. */
  port?: number
  /** The inspector UI the bridge page embeds. Default the hosted Stately inspector (needs internet). */
  url?: string
  /** Append every event to this file, one JSON object per line. */
  record?: string
  /** Called with each event relayed (after recording). */
  onEvent?(event: InspectorWireEvent): void
  /** Messages on the inspection subjects that are not inspector events. */
  onInvalid?(subject: string, reason: string): void
}

export interface InspectionRelay {
  /** The bridge page: `http://localhost:<port>`. */
  readonly pageUrl: string
  readonly port: number
  /** `<prefix>.inspect.*` */
  readonly subject: string
  readonly record: string | undefined
  /** Events forwarded to the inspector server. */
  readonly relayed: number
  /** Messages dropped because they were not inspector events. */
  readonly invalid: number
  /** Stops the subscription, the WebSocket client and the server, and closes the record. Idempotent. */
  stop(): Promise<void>
}

export async function startInspectionRelay(options: InspectionRelayOptions): Promise<InspectionRelay> {
  const { bus } = options
  const subjects = options.subjects ?? createSubjects()
  const subject = subjects.inspect()
  let record: WriteStream | undefined
  if (options.record) {
    record = createWriteStream(options.record, { flags: 'a' })
    await Promise.race([once(record, 'open'), once(record, 'error').then(([error]) => Promise.reject(error))])
    record.on('error', () => {})
  }
  const server = await startBridgeServer({ port: options.port ?? 8080, ...(options.url ? { url: options.url } : {}) }).catch(
    async (error: unknown) => {
      await closeRecord(record)
      throw error
    },
  )
  const sender = await createWebSocketSender(server.wsUrl).catch(async (error: unknown) => {
    await server.stop()
    await closeRecord(record)
    throw error
  })
  let relayed = 0
  let invalid = 0

  const subscription = bus.subscribe(subject, (message) => {
    let event: unknown
    try {
      event = JSON.parse(message.text())
    } catch {
      invalid++
      options.onInvalid?.(message.subject, 'not JSON')
      return
    }
    if (!isInspectorWireEvent(event)) {
      invalid++
      options.onInvalid?.(message.subject, 'not an inspector event')
      return
    }
    // Re-serialized: one event, one line, whatever the publisher's formatting.
    record?.write(`${JSON.stringify(event)}\n`)
    sender.send(event)
    relayed++
    options.onEvent?.(event)
  })
  try {
    await subscription.ready
  } catch (error) {
    sender.stop()
    await server.stop()
    await closeRecord(record)
    throw error
  }

  let stopped: Promise<void> | undefined
  return {
    pageUrl: server.pageUrl,
    port: server.port,
    subject,
    record: options.record,
    get relayed() {
      return relayed
    },
    get invalid() {
      return invalid
    },
    stop() {
      stopped ??= (async () => {
        subscription.unsubscribe()
        sender.stop()
        await server.stop()
        await closeRecord(record)
      })()
      return stopped
    },
  }
}

async function closeRecord(record: WriteStream | undefined): Promise<void> {
  if (!record || record.closed) return
  await new Promise<void>((resolve) => record.end(() => resolve()))
}

/** Options of `connectNatsBus`, and the defaults the transport falls back to. */
import type { HandlerErrorListener } from '@signalbox/core/bus'
import type { NatsCredentialOptions } from './credentials.ts'

/** Why connecting waits for the stream: nobody has created it yet, or the cluster cannot place its replicas yet. */
export type StreamWait = 'missing' | 'placement'

export interface NatsDurableOptions {
  /** JetStream stream name. Default `SIGNALBOX` for the default prefix, else derived from the prefix. */
  stream?: string
  /**
   * `manage` (default): create the stream, or add missing subjects to it. `check`: only read it
   * (`STREAM.INFO`), waiting for it to appear: for roles whose users may not create streams.
   */
  access?: 'manage' | 'check'
  /**
   * Called once when connecting starts waiting for the stream, so a caller can say so or stop
   * waiting (`signal`): `missing` with `access: 'check'` (an agent host creates it), `placement`
   * while a cluster cannot place the stream's replicas yet (its nodes still joining).
   */
  onWaitingForStream?: (streamName: string, why: StreamWait) => void
  /** Subjects the stream captures. Default `defaultDurableSubjects(prefix)`. */
  subjects?: string[]
  /** `msgId` de-duplication window. Default 2 min. */
  duplicateWindowMs?: number
  /** Drop stored messages older than this. Default: keep (limits by age off). */
  maxAgeMs?: number
  /** Default `file` (survives server restarts). */
  storage?: 'file' | 'memory'
  /**
   * Copies of the stream in a JetStream cluster: 3 (or 5) survive the loss of one (two) nodes,
   * including the stream leader. Default 1 (a single server). An existing stream is brought to it.
   */
  replicas?: 1 | 3 | 5
}

export interface NatsBusOptions {
  servers: string | string[]
  /** Connection name (shown by the server's monitoring). Default `signalbox-<pid>`. */
  name?: string
  /** Subject prefix. Default `signalbox.v1`. */
  prefix?: string
  durable?: NatsDurableOptions
  /** Aborts connecting (and the first stream setup). */
  signal?: AbortSignal
  /**
   * How long the first connection may take before `connectNatsBus` fails with `NATS_UNREACHABLE`
   * (nothing answered, or why the last attempt failed). Default 10 s. `Infinity` never gives up.
   */
  connectTimeoutMs?: number
  /**
   * Keep trying while nothing listens at the address or its name does not resolve (a process
   * started before its server), within `connectTimeoutMs`. Default false: such a failure is
   * reported at once (`NATS_UNREACHABLE`), as the `nats` CLI and signalbox's CLI do. To wait
   * forever, as long as it takes: `{ waitForServer: true, connectTimeoutMs: Infinity }`.
   */
  waitForServer?: boolean
  user?: string
  pass?: string
  token?: string
  /**
   * Inbox prefix for this client's replies (requests, JetStream API answers, pulled messages):
   * `_INBOX.<name>` under least privilege, so no other user can read them. Default `_INBOX`.
   */
  inboxPrefix?: string
  /**
   * Private consumers are named `<consumerPrefix>_<purpose>` (e.g. `claw_decisions`) instead of a
   * random name, so the permissions can pin them. One name per purpose: two instances of one role
   * need two prefixes (two users). Default: random names (`sbx_<hex>`).
   */
  consumerPrefix?: string
  /** Creds file, nkey, TLS... as the `nats` CLI takes them (`natsCredentialsFromEnv` reads its variables). */
  credentials?: NatsCredentialOptions
  /** Wait between reconnect attempts. Default 250 ms (the client's 2 s is slow for agents). */
  reconnectTimeWaitMs?: number
  /** Client PING interval, which bounds how long a dead (not closed) server goes unnoticed. Default 10 s. */
  pingIntervalMs?: number
  /** Called when a handler throws or rejects. Default: ignored (but counted in `handlerErrors`). */
  onHandlerError?: HandlerErrorListener
  /** How long one `durablePublish` attempt waits for the stream's ack before retrying. Default 2 s. */
  publishAttemptTimeoutMs?: number
  /** `close()` gives draining this long before closing hard (a disconnected client cannot drain). Default 5 s. */
  drainTimeoutMs?: number
  /** Pull request lifetime of durable consumers. Default 10 s. */
  pullExpiresMs?: number
  /**
   * How often the server confirms an idle pull request is still held (at most half of
   * `pullExpiresMs`). A pull the server lost (its consumer's leader died) is noticed after two
   * missed heartbeats and the consumer set up again (every ≤ 2 s until it has a leader): this
   * bounds how long a consumer stays deaf after a JetStream leader loss. Default 1 s.
   */
  pullHeartbeatMs?: number
  /** Messages a durable consumer buffers ahead of its handler. Default 16. */
  pullBatch?: number
  /** A private (ephemeral) consumer whose client vanished is deleted by the server after this. Default 2 min. */
  ephemeralInactiveMs?: number
  /**
   * The `ack_wait` durable consumers get on the server (capped by a consumer's own `ackWaitMs`).
   * What a consumer holds is extended with in-progress acks every third of it while the consumer
   * lives, so this bounds how long the messages of a consumer that died (or lost its server)
   * wait before another member gets them. Default 5 s.
   */
  serverAckWaitMs?: number
}

/** See `NatsBusOptions.pullHeartbeatMs`: a lost pull is pulled again within about 2 s. */
export const DEFAULT_PULL_HEARTBEAT_MS = 1_000

/** See `NatsBusOptions.serverAckWaitMs`: short, so a dead holder's messages come back within seconds. */
export const DEFAULT_SERVER_ACK_WAIT_MS = 5_000

/** The connection name when none is given. */
export function defaultConnectionName(): string {
  return `signalbox-${process.pid}`
}

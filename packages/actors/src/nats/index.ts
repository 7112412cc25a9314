/** `@signalbox/actors/nats`: the NATS transport (core NATS for requests, JetStream for durable messages). */
export { NatsConnectError, type NatsConnectErrorCode } from './connect-errors.ts'
export {
  mergeCredentials,
  type NatsCredentialOptions,
  NatsCredentialsError,
  natsCredentialsFromEnv,
  redactUrlSecrets,
} from './credentials.ts'
export { connectNatsBus, NatsBus } from './nats-bus.ts'
export type { NatsBusOptions, NatsDurableOptions, StreamWait } from './options.ts'
export { defaultStreamName } from './stream.ts'

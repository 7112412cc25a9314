export { classifyConnectError, dialNats, NatsConnectError, type NatsConnectErrorCode, redactUrls } from './connect-errors.ts'
export {
  credentialOf,
  describeCredential,
  mergeCredentials,
  type NatsCredentialOptions,
  NatsCredentialsError,
  natsConnectOptions,
  natsCredentialsFromEnv,
  serverList,
} from './credentials.ts'
export { connectNatsBus, NatsBus } from './nats-bus.ts'
export type { NatsBusOptions, NatsDurableOptions } from './options.ts'
export { defaultStreamName } from './stream.ts'

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
export { connectNatsBus, defaultStreamName, NatsBus, type NatsBusOptions, type NatsDurableOptions } from './nats-bus.ts'

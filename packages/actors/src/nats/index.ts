export { connectNatsBus, NatsBus } from './nats-bus.ts'
export type { NatsBusOptions, NatsDurableOptions } from './options.ts'
export { defaultStreamName } from './stream.ts'

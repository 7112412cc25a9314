export { connectNatsBus, defaultStreamName, NatsBus, type NatsBusOptions, type NatsDurableOptions } from './nats-bus.ts'

import { type Context, context, ROOT_CONTEXT, type TextMapPropagator } from '@opentelemetry/api'
import type {
  Bus,
  BusHeaders,
  DurableConsumeOptions,
  DurableHandler,
  DurablePublishOptions,
  MessageHandler,
  PublishOptions,
  RequestManyOptions,
  RequestOptions,
  SubscribeOptions,
} from '@signalbox/core/bus'
import { W3CTraceContext } from './w3c-trace-context.ts'

export interface TraceContextBusOptions {
  /** Default: W3C Trace Context (`traceparent`, `tracestate`). */
  propagator?: TextMapPropagator
}

const setter = {
  set: (carrier: BusHeaders, key: string, value: string) => {
    carrier[key] = value
  },
}
const getter = {
  get: (carrier: BusHeaders, key: string) => carrier[key],
  keys: (carrier: BusHeaders) => Object.keys(carrier),
}

/**
 * The one place trace context crosses the bus. Everything sent (publish, request, request-many,
 * durable publish) carries the active span's context in its headers; every handler (subscribe, durable
 * consume) runs in the context extracted from the message's headers, so spans started there
 * (a tool host, a reviewer service, a hosted run) are children of the sender's span.
 * Messages without trace headers, and sends outside any span, pass through untouched.
 */
export function withTraceContext(bus: Bus, options: TraceContextBusOptions = {}): Bus {
  const propagator = options.propagator ?? new W3CTraceContext()
  const headersFor = (given: BusHeaders | undefined): BusHeaders | undefined => {
    const carrier: BusHeaders = { ...given }
    propagator.inject(context.active(), carrier, setter)
    return given === undefined && Object.keys(carrier).length === 0 ? undefined : carrier
  }
  const extracted = (headers: BusHeaders | undefined): Context | undefined =>
    headers === undefined ? undefined : propagator.extract(ROOT_CONTEXT, headers, getter)
  const traced =
    <M extends { headers: BusHeaders | undefined }>(handler: (message: M) => void | Promise<void>) =>
    (message: M) => {
      const parent = extracted(message.headers)
      return parent === undefined ? handler(message) : context.with(parent, handler, undefined, message)
    }

  const overrides: Partial<Bus> = {
    publish(subject: string, data: Uint8Array | string, publishOptions?: PublishOptions) {
      const headers = headersFor(publishOptions?.headers)
      bus.publish(subject, data, headers ? { ...publishOptions, headers } : publishOptions)
    },
    request(subject: string, data: Uint8Array | string, requestOptions: RequestOptions) {
      const headers = headersFor(requestOptions.headers)
      return bus.request(subject, data, headers ? { ...requestOptions, headers } : requestOptions)
    },
    requestMany(subject: string, data: Uint8Array | string, requestOptions: RequestManyOptions) {
      const headers = headersFor(requestOptions.headers)
      return bus.requestMany(subject, data, headers ? { ...requestOptions, headers } : requestOptions)
    },
    durablePublish(subject: string, data: Uint8Array | string, publishOptions: DurablePublishOptions) {
      const headers = headersFor(publishOptions.headers)
      return bus.durablePublish(subject, data, headers ? { ...publishOptions, headers } : publishOptions)
    },
    subscribe(subject: string, handler: MessageHandler, subscribeOptions?: SubscribeOptions) {
      return bus.subscribe(subject, traced(handler), subscribeOptions)
    },
    durableConsume(subject: string, handler: DurableHandler, consumeOptions?: DurableConsumeOptions) {
      return bus.durableConsume(subject, traced(handler), consumeOptions)
    },
  }
  // A proxy, so a transport's own extras (a NATS bus's stream name, KV access) stay reachable.
  return new Proxy(bus, {
    get(target, key) {
      if (Object.hasOwn(overrides, key)) return overrides[key as keyof Bus]
      const value = Reflect.get(target, key, target)
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
}

/**
 * A context handed to user code (a hook's context, a tool's, a model call's options) whose
 * `signal` is made only when read: an own, enumerable property, so a spread of the context copies
 * it as it copies the rest.
 *
 * Not a `get signal()` written in the object literal: on Node 20 an object literal with a getter
 * of its own is made in dictionary mode (~0.6 µs to create, each later read a dictionary lookup),
 * seven of them a tool step with five hooks. Here every such context gets one shared getter, so
 * contexts of one kind share a hidden class and keep fast properties
 * (`test/machine/context-shapes.process.test.ts` checks it).
 */

/** Where the shared getter finds the context's signal (a symbol: found through a `Proxy` too). */
const SIGNAL_SOURCE: unique symbol = Symbol('signalbox.signalSource')

/** Hands out only the signal of what it wraps (the work's arguments hold the run's runtime). */
class SignalSource {
  readonly #from: { readonly signal: AbortSignal }
  constructor(from: { readonly signal: AbortSignal }) {
    this.#from = from
  }
  get signal(): AbortSignal {
    return this.#from.signal
  }
}

const lazySignal: PropertyDescriptor = {
  get(this: { [SIGNAL_SOURCE]: SignalSource }) {
    return this[SIGNAL_SOURCE].signal
  },
  enumerable: true,
  configurable: true,
}

/** `fields`, given a `signal` read from `from` when first asked for (an own, enumerable property). */
export function withLazySignal<T extends object>(
  from: { readonly signal: AbortSignal },
  fields: T,
): NoInfer<T> & { signal: AbortSignal } {
  ;(fields as { [SIGNAL_SOURCE]?: SignalSource })[SIGNAL_SOURCE] = new SignalSource(from)
  return Object.defineProperty(fields, 'signal', lazySignal) as T & { signal: AbortSignal }
}

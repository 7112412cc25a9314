import type { default as OpenAIClient } from 'openai'
import type { CallAbort } from './call-abort.ts'

/** Where a request's tie rides from `client.post`'s `fetchOptions` to `fetchWithTimeout`. */
const TIE = Symbol('signalbox.requestTie')

/**
 * One model call's link from its `CallAbort` to the abort controller the SDK makes for the
 * request: aborting the call aborts the request, as a signal handed to the SDK would, without
 * making one. Untied when the call has ended (a streamed reply included), so nothing of the call
 * stays registered on the run.
 */
export class RequestTie {
  readonly #abort: CallAbort
  #untie: (() => void) | undefined
  /** The SDK handed over the request's controller: the call can be aborted. */
  tied = false

  constructor(abort: CallAbort) {
    this.#abort = abort
  }

  /** What goes in the request's `fetchOptions`. */
  get fetchOptions(): Record<symbol, RequestTie> {
    return { [TIE]: this }
  }

  tie(controller: AbortController): void {
    this.tied = true
    // A request sent again (a retry) is tied in place of the one before.
    this.#untie?.()
    this.#untie = this.#abort.onAbort(() => controller.abort())
  }

  untie(): void {
    this.#untie?.()
    this.#untie = undefined
  }
}

type OpenAIClass = new (...args: ConstructorParameters<typeof OpenAIClient>) => OpenAIClient

/**
 * The SDK's client, tying each request that carries a `RequestTie` to the controller the SDK
 * makes for it (`fetchWithTimeout` receives it). A request without one goes as it would.
 */
export function tyingClient(Client: OpenAIClass): OpenAIClass {
  // Named as the SDK's: its User-Agent header is the client class's name (`OpenAI/JS 6.x`).
  return class OpenAI extends Client {
    override fetchWithTimeout(
      url: Parameters<OpenAIClient['fetchWithTimeout']>[0],
      init: RequestInit | undefined,
      ms: number,
      controller: AbortController,
    ): Promise<Response> {
      // Left on the request's options: `fetch` reads only the fields it knows.
      const tie = (init as Record<symbol, unknown> | undefined)?.[TIE]
      if (tie instanceof RequestTie) tie.tie(controller)
      return super.fetchWithTimeout(url, init, ms, controller)
    }
  }
}

/**
 * The scripted model in-process: a `Provider` that plays a script without HTTP, for unit tests
 * and benchmarks. Same script format and the same loud failures as the scripted model server.
 */
import { ProviderError } from '../errors.ts'
import type { Message } from '../messages.ts'
import { callAborted } from '../provider/call-abort.ts'
import type { Provider, ProviderCallOptions, ProviderRequest, ProviderResponse } from '../provider/provider.ts'
import { abortError, isErrorStep, type RecordedRequest, resolveReply, type Script, sleep, splitWords } from './script.ts'
import { ScriptRunner } from './script-runner.ts'

export interface ScriptedProviderOptions {
  script: Script
  /** Reported as the answering model, and the name used in failure messages. Default `'scripted'`. */
  model?: string
  /**
   * Keep a copy of every request in `requests` (default true). Off, nothing is recorded and
   * `expect`/responders see the caller's live objects: cheaper, for benchmarks.
   */
  record?: boolean
}

const noHeaders: Record<string, string> = Object.freeze({}) as Record<string, string>

export class ScriptedProvider implements Provider {
  readonly model: string
  readonly requests: RecordedRequest[] = []
  private readonly runner: ScriptRunner
  private readonly record: boolean
  private callIds = 0
  private readonly nextCallId = () => `call_${++this.callIds}`

  constructor(options: ScriptedProviderOptions) {
    this.model = options.model ?? 'scripted'
    this.record = options.record ?? true
    this.runner = new ScriptRunner({ [this.model]: options.script })
  }

  /** Unexpected calls so far (each was also thrown from `complete`). */
  get failures(): Error[] {
    return this.runner.failures
  }

  async complete(request: ProviderRequest, options: ProviderCallOptions): Promise<ProviderResponse> {
    const { onTextDelta } = options
    // The signal is read only when it is needed (an abort, a delay): see call-abort.ts.
    if (callAborted(options)) throw abortError(options.signal)
    const recorded: RecordedRequest = {
      model: this.model,
      // A JSON round-trip: the caller keeps mutating its transcript, the record must not change.
      messages: this.record ? (JSON.parse(JSON.stringify(request.messages)) as Message[]) : request.messages,
      tools: this.record ? request.tools.slice() : request.tools,
      stream: onTextDelta !== undefined,
      body: request,
      headers: noHeaders,
      receivedAt: Date.now(),
    }
    if (this.record) this.requests.push(recorded)

    let outcome = this.runner.next(recorded)
    if (outcome instanceof Promise) outcome = await outcome
    if (!outcome.ok) throw outcome.error
    const step = outcome.step
    if (step.delayMs && step.delayMs > 0) await sleep(step.delayMs, options.signal)
    if (callAborted(options)) throw abortError(options.signal)
    if (isErrorStep(step)) {
      const { status, message } = step.error
      throw new ProviderError(message, { status, retryable: status === 429 || status >= 500 })
    }

    const reply = resolveReply(step, recorded, this.nextCallId)
    if (onTextDelta && reply.content) for (const word of splitWords(reply.content)) onTextDelta(word)
    return {
      message:
        reply.toolCalls.length > 0
          ? { role: 'assistant', content: reply.content, tool_calls: reply.toolCalls }
          : { role: 'assistant', content: reply.content },
      finishReason: reply.finishReason,
      usage: reply.usage,
      model: this.model,
    }
  }

  /** Throws listing unconsumed steps and every unexpected call. */
  assertDone(): void {
    this.runner.assertDone()
  }

  /** Forget requests and failures; restart the script (or replace it). */
  reset(script?: Script): void {
    this.requests.length = 0
    if (script) this.runner.load({ [this.model]: script })
    else this.runner.reset()
  }
}

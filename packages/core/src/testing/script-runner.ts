/**
 * Plays scripts: routes each request to its model's script, hands out steps in order, and
 * turns every unplanned request into a recorded, loud failure. Shared by server and provider.
 */
import { isErrorStep, type RecordedRequest, type Script, ScriptedModelError, type ScriptStep, type Scripts } from './script.ts'

export type StepOutcome = { ok: true; step: ScriptStep } | { ok: false; error: ScriptedModelError }

interface Track {
  readonly key: string
  readonly script: Script
  /** Next array step to play. */
  cursor: number
  /** Times the current (error) step has already been answered. */
  repeats: number
  /** Requests routed here so far. */
  calls: number
}

export class ScriptRunner {
  /** Cleared in place on reset, so references handed out stay live. */
  readonly failures: Error[] = []
  private tracks = new Map<string, Track>()
  private readonly unknownCalls = new Map<string, number>()

  constructor(scripts: Scripts) {
    this.load(scripts)
  }

  /** Restart every script from its first step (replacing them when given) and forget failures. */
  load(scripts: Scripts): void {
    this.tracks = new Map(Object.entries(scripts).map(([key, script]) => [key, { key, script, cursor: 0, repeats: 0, calls: 0 }]))
    this.unknownCalls.clear()
    this.failures.length = 0
  }

  reset(): void {
    for (const track of this.tracks.values()) {
      track.cursor = 0
      track.repeats = 0
      track.calls = 0
    }
    this.unknownCalls.clear()
    this.failures.length = 0
  }

  keys(): string[] {
    return [...this.tracks.keys()]
  }

  /** Synchronous for array scripts (the hot path); a promise only for async responders. */
  next(request: RecordedRequest): StepOutcome | Promise<StepOutcome> {
    const track = this.tracks.get(request.model) ?? this.tracks.get('*')
    if (!track) {
      const n = (this.unknownCalls.get(request.model) ?? 0) + 1
      this.unknownCalls.set(request.model, n)
      const known =
        this.keys()
          .map((k) => `"${k}"`)
          .join(', ') || 'none'
      return this.fail('SCRIPT_UNKNOWN_MODEL', n, request, `no script for this model (scripts: ${known})`)
    }
    const index = track.calls++
    const { script } = track
    if (typeof script === 'function') return this.respond(script, index, request)

    const step = script[track.cursor]
    if (!step) return this.fail('SCRIPT_EXHAUSTED', index + 1, request, 'script exhausted')
    const stepNumber = track.cursor + 1
    // An error step with `times` stays current until it has been answered that often.
    if (isErrorStep(step) && ++track.repeats < (step.times ?? 1)) {
      // stay on this step
    } else {
      track.cursor += 1
      track.repeats = 0
    }
    return this.check(step, index, request, `step #${stepNumber}`)
  }

  private respond(
    responder: Exclude<Script, ScriptStep[]>,
    index: number,
    request: RecordedRequest,
  ): StepOutcome | Promise<StepOutcome> {
    const failed = (cause: unknown) =>
      this.fail(
        'SCRIPT_RESPONDER_FAILED',
        index + 1,
        request,
        `responder threw: ${cause instanceof Error ? cause.message : String(cause)}`,
        cause,
      )
    try {
      const step = responder(request, index)
      if (step instanceof Promise) return step.then((s) => this.check(s, index, request, 'responder step'), failed)
      return this.check(step, index, request, 'responder step')
    } catch (cause) {
      return failed(cause)
    }
  }

  private check(step: ScriptStep, index: number, request: RecordedRequest, label: string): StepOutcome {
    if (step.expect) {
      let verdict: unknown
      try {
        verdict = step.expect(request)
      } catch (cause) {
        verdict = cause instanceof Error ? cause.message : String(cause)
      }
      if (verdict !== true) {
        const why = typeof verdict === 'string' ? verdict : 'expect() returned false'
        return this.fail('SCRIPT_MISMATCH', index + 1, request, `${label} does not match: ${why}`)
      }
    }
    return { ok: true, step }
  }

  private fail(
    code: ConstructorParameters<typeof ScriptedModelError>[0],
    n: number,
    request: RecordedRequest,
    why: string,
    cause?: unknown,
  ): StepOutcome {
    const error = new ScriptedModelError(code, `scripted model: unexpected request #${n} for model "${request.model}": ${why}`, {
      cause,
      details: { model: request.model, request: n },
    })
    this.failures.push(error)
    return { ok: false, error }
  }

  /** Throws when any array script has steps left, or when anything unexpected happened. */
  assertDone(): void {
    const problems: string[] = []
    for (const track of this.tracks.values()) {
      if (typeof track.script === 'function' || track.cursor >= track.script.length) continue
      const left = track.script
        .slice(track.cursor)
        .map((step, i) => describeStep(step, track.cursor + i + 1, i === 0 ? track.repeats : 0))
      problems.push(`model "${track.key}": ${left.length} unconsumed step(s): ${left.join('; ')}`)
    }
    for (const failure of this.failures) problems.push(failure.message)
    if (problems.length === 0) return
    throw new ScriptedModelError('SCRIPT_NOT_DONE', `scripted model: script not done:\n  - ${problems.join('\n  - ')}`, {
      details: { problems },
    })
  }
}

function describeStep(step: ScriptStep, number: number, repeatsDone: number): string {
  if (isErrorStep(step)) {
    const times = step.times ?? 1
    return `#${number} error ${step.error.status}${times > 1 ? ` (${times - repeatsDone} of ${times} left)` : ''}`
  }
  const parts: string[] = []
  if (step.content !== undefined) parts.push(`"${step.content.length > 40 ? `${step.content.slice(0, 40)}…` : step.content}"`)
  if (step.toolCalls?.length) parts.push(`tool calls ${step.toolCalls.map((c) => c.name).join(', ')}`)
  return `#${number} reply ${parts.join(' + ') || '(empty)'}`
}

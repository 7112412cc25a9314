import { afterEach, describe, expect, it } from 'vitest'
import { SignalboxError } from '../../src/errors.ts'
import type { PromiseWork, WorkArgs } from '../../src/machine/actors.ts'
import type { AgentMachineEvent } from '../../src/machine/context.ts'
import { outputOf } from '../../src/machine/waits.ts'
import { RunWorker } from '../../src/machine/worker.ts'
import { SimulatedClock } from '../../src/testing/index.ts'

// The worker reads the run's clock (how long each work ran); nothing else of the runtime.
const clock = new SimulatedClock()
const runtime = { clock } as unknown as WorkArgs<unknown>['runtime']

/** Promise work that waits until `finish` is called, handing its args out. */
function pendingWork() {
  let finish: (value: unknown) => void = () => {}
  let args: WorkArgs<unknown> | undefined
  const work: PromiseWork = {
    kind: 'promise',
    run: (given) => {
      args = given
      return new Promise((resolve) => {
        finish = resolve
      })
    },
  }
  return { work, args: () => args as WorkArgs<unknown>, finish: (value: unknown) => finish(value) }
}

const settle = () => new Promise((resolve) => setImmediate(resolve))

describe('RunWorker: the signal of promise work', () => {
  const Original = globalThis.AbortController
  afterEach(() => {
    globalThis.AbortController = Original
  })

  it('is not made while nothing reads it', async () => {
    let made = 0
    globalThis.AbortController = class extends Original {
      constructor() {
        super()
        made++
      }
    }
    const events: AgentMachineEvent[] = []
    const worker = new RunWorker((event) => events.push(event), runtime)
    const { work, args, finish } = pendingWork()
    worker.start(work, 'in', 'callingModel')
    expect(args().input).toBe('in')
    clock.increment(25)
    finish('out')
    await settle()
    worker.stop()
    // The answer says how long the work ran (a tool's own run time, for tool.end).
    expect(events).toEqual([{ type: 'work.done', wait: 'callingModel', output: 'out', elapsedMs: 25 }])
    expect(made).toBe(0)
    // Read at last, it is made then.
    expect(args().signal.aborted).toBe(false)
    expect(made).toBe(1)
  })

  it('aborts when the work is stopped, read before or after the stop; the answer is dropped', async () => {
    const events: AgentMachineEvent[] = []
    const worker = new RunWorker((event) => events.push(event), runtime)
    const early = pendingWork()
    const late = pendingWork()
    worker.start(early.work, 1, 'runningBeforeTurn')
    worker.start(late.work, 2, 'runningBeforeTurn')
    const signal = early.args().signal
    expect(signal.aborted).toBe(false)
    worker.stop()
    expect(signal.aborted).toBe(true)
    expect(late.args().signal.aborted).toBe(true)
    expect(late.args().signal.reason).toBeInstanceOf(DOMException)
    early.finish('too late')
    late.finish('too late')
    await settle()
    expect(events).toEqual([])
  })

  it('is not aborted when the work had answered before its state was left', async () => {
    const events: AgentMachineEvent[] = []
    const worker = new RunWorker((event) => events.push(event), runtime)
    const { work, args, finish } = pendingWork()
    worker.start(work, 'in', 'callingModel')
    const signal = args().signal
    finish('out')
    await settle()
    worker.stop()
    expect(signal.aborted).toBe(false)
    expect(events).toEqual([{ type: 'work.done', wait: 'callingModel', output: 'out', elapsedMs: 0 }])
  })
})

describe("outputOf: a wait reads only its own work's answer", () => {
  it("returns the output of the named wait's answer, typed for it", () => {
    const event: AgentMachineEvent = { type: 'work.done', wait: 'executingTool', output: { output: 'ok' }, elapsedMs: 3 }
    expect(outputOf('executingTool', event)).toEqual({ output: 'ok' })
  })

  it("refuses another wait's answer, or an event that is no answer, as a broken invariant", () => {
    const other: AgentMachineEvent = { type: 'work.done', wait: 'callingModel', output: {}, elapsedMs: 0 }
    expect(() => outputOf('executingTool', other)).toThrow(
      /executingTool: expected its work's answer, got the answer of callingModel/,
    )
    const error = (() => {
      try {
        outputOf('executingTool', { type: 'agent.start' })
      } catch (thrown) {
        return thrown
      }
    })()
    expect(SignalboxError.is(error, 'INTERNAL_ERROR')).toBe(true)
  })
})

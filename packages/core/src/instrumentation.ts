import { ConfigError } from './errors.ts'
import type { ApprovalDecision, ApprovalRequest, Reviewer } from './hitl/types.ts'
import { HOOK_POINTS, type HookPoint, type Hooks } from './hooks.ts'
import type { Tool, ToolContext } from './tool.ts'

/** A hook function about to run: which point, which hook set (by position) and its context. */
export interface HookWork {
  kind: 'hook'
  point: HookPoint
  /** The hook set's position in the agent's `hooks` list. */
  index: number
  /** The function's name, when it has one (`function maskIds(...)`). */
  name: string | undefined
  context: { agentId: string; runId: string; turn: number; callId?: string; toolName?: string }
}

/** A tool's `execute` about to run. */
export interface ToolWork {
  kind: 'tool'
  toolName: string
  context: ToolContext
}

/** The reviewer about to be asked. */
export interface ReviewWork {
  kind: 'review'
  request: ApprovalRequest
}

/**
 * A stored run this process continues (after a restart, or taken over from another host), about
 * to announce itself (`run.start` with `resumed`): with what the instrumentations kept with it.
 */
export interface ResumeWork {
  kind: 'resume'
  agentId: string
  runId: string
  /** What `carry` gave when the run started, as stored with it (empty when nothing was kept). */
  carried: Readonly<Record<string, string>>
}

export type InstrumentedWork = HookWork | ToolWork | ReviewWork | ResumeWork

/**
 * Runs the agent's own calls into user code (hooks, tools, the reviewer) inside a scope, e.g. a
 * tracing context, so what they send over the bus carries it. `run` must be called exactly once
 * and its result (or throw) returned unchanged: an instrumentation watches, it never decides.
 * Events say *what happened*; an instrumentation only wraps *where it happens*.
 */
export interface Instrumentation {
  around<T>(work: InstrumentedWork, run: () => T): T
  /**
   * What to keep with a stored run (in its checkpoint), asked once it has started: e.g. its trace
   * context, so the process that resumes it continues the same trace (handed back in
   * `ResumeWork.carried`). A few short strings; `undefined` keeps nothing.
   */
  carry?(run: { agentId: string; runId: string }): Record<string, string> | undefined
}

/**
 * The agent's instrumentations. Tools, hooks and the reviewer are wrapped once at construction;
 * with none attached the wrapper is a length check and a direct call.
 */
export class Instruments {
  readonly #attached: Instrumentation[] = []

  attach(instrumentation: Instrumentation): () => void {
    if (!instrumentation || typeof instrumentation.around !== 'function')
      throw new ConfigError('An instrumentation needs an around(work, run) function.')
    this.#attached.push(instrumentation)
    return () => {
      const at = this.#attached.indexOf(instrumentation)
      if (at >= 0) this.#attached.splice(at, 1)
    }
  }

  run<T>(work: () => InstrumentedWork, run: () => T): T {
    const attached = this.#attached
    if (attached.length === 0) return run()
    const described = work()
    // The first attached is the outermost scope.
    let next = run
    for (let i = attached.length - 1; i >= 0; i--) {
      const instrumentation = attached[i] as Instrumentation
      const inner = next
      next = () => instrumentation.around(described, inner)
    }
    return next()
  }

  /** What the attached instrumentations keep with a stored run (merged; the first attached wins a key). */
  carry(run: { agentId: string; runId: string }): Record<string, string> | undefined {
    let carried: Record<string, string> | undefined
    for (const instrumentation of this.#attached) {
      const given = instrumentation.carry?.(run)
      if (given !== undefined) carried = { ...given, ...carried }
    }
    return carried
  }

  tool<A, N extends string>(tool: Tool<A, N>): Tool<A, N> {
    const execute = tool.execute
    // A tool may be a class instance: keep its prototype (validate, getters) by delegating to it.
    const wrapped: Tool<A, N> = Object.create(tool)
    wrapped.execute = (args, context) =>
      this.run(
        () => ({ kind: 'tool', toolName: tool.name, context }),
        () => execute.call(tool, args, context),
      )
    return wrapped
  }

  reviewer(reviewer: Reviewer | undefined): Reviewer | undefined {
    if (!reviewer) return undefined
    const open = reviewer.open?.bind(reviewer)
    return {
      // `open` (store, then announce) must survive the wrapping, or the request is announced too early;
      // it runs in the review's scope, so what it publishes carries the run's trace.
      ...(open
        ? {
            open: (request: ApprovalRequest, options: { signal: AbortSignal }) =>
              this.run(
                () => ({ kind: 'review', request }),
                () => open(request, options),
              ),
          }
        : {}),
      review: (request, options): Promise<ApprovalDecision> =>
        this.run(
          () => ({ kind: 'review', request }),
          () => reviewer.review(request, options),
        ),
      // A stored run's deadline asks `recover` for a decision made while no process ran.
      ...(reviewer.recover ? { recover: reviewer.recover.bind(reviewer) } : {}),
      // A correction withdraws the request from every reviewer.
      ...(reviewer.withdraw ? { withdraw: reviewer.withdraw.bind(reviewer) } : {}),
    }
  }

  /** Wraps each hook function; unknown keys are left as they are for `HookChain` to refuse. */
  hooks(hooks: Hooks | Hooks[] | undefined): Hooks[] | undefined {
    if (hooks === undefined) return undefined
    const sets = Array.isArray(hooks) ? hooks : [hooks]
    return sets.map((set, index) => {
      if (!set || typeof set !== 'object') return set
      const wrapped: Record<string, unknown> = { ...set }
      for (const point of HOOK_POINTS) {
        const fn = set[point] as ((context: HookWork['context']) => unknown) | undefined
        if (typeof fn !== 'function') continue
        const name = fn.name && fn.name !== point ? fn.name : undefined
        wrapped[point] = (context: HookWork['context']) =>
          this.run(
            () => ({ kind: 'hook', point, index, name, context }),
            () => fn.call(set, context),
          )
      }
      return wrapped as Hooks
    })
  }
}

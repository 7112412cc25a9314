import type { BudgetCheck, RunHandle } from '@signalbox/core'
import { ChildRunError } from './child-run-error.ts'

/** Limits for one run tree (a root run and every run it delegates to, in any process). */
export interface TreeLimits {
  /** Deepest delegation below the root (root = 0). Default 4. */
  maxDepth?: number
  /** Children of one parent running at once; more wait their turn. Default 8. */
  maxConcurrentChildren?: number
  /** Turns summed over the tree, root included. */
  maxTotalTurns?: number
  /** Tokens summed over the tree, root included. */
  maxTotalTokens?: number
  /** Runs in the tree, root included (each delegation, fan-out task and hand-off starts one). */
  maxTotalRuns?: number
}

/** The limits a run tree carries from host to host (in `run.request`): each host applies them on top of its own. */
export type CarriedLimits = Pick<TreeLimits, 'maxDepth' | 'maxTotalTurns' | 'maxTotalTokens' | 'maxTotalRuns'>

/** What one run may still use of its tree's budget (absent: no limit). */
export interface RunBudget {
  turns?: number
  tokens?: number
  /** Runs the new run and everything below it may start, itself included. */
  runs?: number
}

export interface TreeState {
  /** This process's limits with the ones the tree carries (the lower of each). */
  limits: CarriedLimits
  turns: number
  tokens: number
  /** Runs of the tree started here, and the whole subtrees of remote children once their results came back. */
  runs: number
  /** Every run in this process that belongs to the tree, to cancel them all at once. */
  handles: Set<RunHandle<unknown>>
  /** Set once the tree went over its turns or tokens (the runs were cancelled for it). */
  exceeded?: string
}

/**
 * What each run tree used in this process (turns, tokens) against its limits, and which of its
 * runs live here, so a tree over budget is stopped as a whole. A tree is known from its first
 * run here until its last one ends.
 */
export class RunTreeLedger {
  readonly limits: Required<Pick<TreeLimits, 'maxDepth' | 'maxConcurrentChildren'>> & TreeLimits
  readonly #trees = new Map<string, TreeState>()
  /** Runs in the subtree of each run hosted here for a parent elsewhere (below it, by run id): its result reports them. */
  readonly #subtrees = new Map<string, number>()

  constructor(limits: TreeLimits = {}) {
    this.limits = { maxDepth: 4, maxConcurrentChildren: 8, ...limits }
  }

  /** Whether the tree has a turn or token budget at all (else nothing needs counting). */
  get counts(): boolean {
    return this.limits.maxTotalTurns !== undefined || this.limits.maxTotalTokens !== undefined
  }

  /** The limits that hold for the tree of `rootRunId` here: this process's, lowered by what the tree carries. */
  limitsOf(rootRunId: string | undefined): CarriedLimits {
    const tree = rootRunId === undefined ? undefined : this.#trees.get(rootRunId)
    return tree?.limits ?? this.#own()
  }

  /**
   * Before a run starts below `runPath`: refuses it when the tree is too deep or spent, else
   * says what it may use. A root starts with the whole budget; a child with what its tree has left.
   */
  admit(runPath: string[]): RunBudget {
    const depth = runPath.length
    const rootRunId = runPath[0]
    const limits = this.limitsOf(rootRunId)
    const maxDepth = limits.maxDepth ?? this.limits.maxDepth
    if (depth > maxDepth) {
      const whose = maxDepth < this.limits.maxDepth ? 'the run tree’s limit' : 'the limit'
      throw new ChildRunError('TREE_DEPTH_EXCEEDED', `Delegation is ${depth} levels deep; ${whose} is ${maxDepth}.`, {
        depth,
        maxDepth,
      })
    }
    const budget = this.#remaining(rootRunId)
    if (budget.turns !== undefined && budget.turns <= 0) {
      throw new ChildRunError('TREE_BUDGET_EXCEEDED', `The run tree used all of its ${limits.maxTotalTurns} turns.`)
    }
    if (rootRunId && limits.maxTotalTokens !== undefined && (this.#trees.get(rootRunId)?.tokens ?? 0) >= limits.maxTotalTokens) {
      throw new ChildRunError('TREE_BUDGET_EXCEEDED', `The run tree used all of its ${limits.maxTotalTokens} tokens.`)
    }
    if (budget.runs !== undefined && budget.runs <= 0) {
      throw new ChildRunError('TREE_BUDGET_EXCEEDED', `The run tree started all of its ${limits.maxTotalRuns} runs.`)
    }
    return budget
  }

  /**
   * The tree of `rootRunId`, opened by its first run in this process; `carried`: the limits the
   * tree brought with a run requested from elsewhere (the lower of each with this process's own).
   */
  open(rootRunId: string, carried?: CarriedLimits): TreeState {
    let tree = this.#trees.get(rootRunId)
    if (!tree) {
      tree = { limits: this.#own(), turns: 0, tokens: 0, runs: 0, handles: new Set() }
      this.#trees.set(rootRunId, tree)
    }
    if (carried) tree.limits = lowest(tree.limits, carried)
    return tree
  }

  /** Whether the tree of `rootRunId` has a turn or token budget here (its runs' turns and tokens are counted). */
  countsTree(rootRunId: string): boolean {
    const limits = this.limitsOf(rootRunId)
    return limits.maxTotalTurns !== undefined || limits.maxTotalTokens !== undefined
  }

  /** A run of the tree ended (or never started): the tree is forgotten with its last run here. */
  leave(rootRunId: string, handle?: RunHandle<unknown>): void {
    const tree = this.#trees.get(rootRunId)
    if (!tree) return
    if (handle) tree.handles.delete(handle)
    if (tree.handles.size === 0) this.#trees.delete(rootRunId)
  }

  countTurn(rootRunId: string): void {
    const tree = this.#trees.get(rootRunId)
    if (tree) tree.turns++
  }

  /** A reply that overshoots the tokens stops the whole tree at once. */
  countTokens(rootRunId: string, tokens: number): void {
    const tree = this.#trees.get(rootRunId)
    if (!tree) return
    tree.tokens += tokens
    this.#stopIfOver(rootRunId)
  }

  /**
   * Runs started below `runPath` (a run starting here, or a remote child accepted: 1; the rest of
   * a remote child's subtree when its result comes back): they count against the tree, and
   * against the subtree of every ancestor hosted here for a parent elsewhere.
   */
  countRuns(runPath: readonly string[], runs: number): void {
    if (runs <= 0) return
    const tree = this.#trees.get(runPath[0] ?? '')
    if (tree) tree.runs += runs
    for (const id of runPath) {
      const below = this.#subtrees.get(id)
      if (below !== undefined) this.#subtrees.set(id, below + runs)
    }
  }

  /** A run hosted here for a parent elsewhere: the runs below it are counted for its result (`subtreeRuns`). */
  trackSubtree(runId: string): void {
    if (!this.#subtrees.has(runId)) this.#subtrees.set(runId, 0)
  }

  /** The runs of the subtree of `runId` (itself included); it is no longer tracked. */
  subtreeRuns(runId: string): number {
    const below = this.#subtrees.get(runId) ?? 0
    this.#subtrees.delete(runId)
    return 1 + below
  }

  /**
   * What a child elsewhere used counts against the tree here too (its turns were counted on its
   * host), and so do the runs of its subtree (`runs`, itself included: it was counted when accepted).
   */
  countChild(runPath: readonly string[], used: { turns: number; tokens: number; runs?: number | undefined }): void {
    this.countRuns(runPath, (used.runs ?? 1) - 1)
    const tree = this.#trees.get(runPath[0] ?? '')
    if (!tree) return
    tree.turns += used.turns
    tree.tokens += used.tokens
  }

  /** What every run of a tree asks before each turn: is anything left for one more? */
  check(rootRunId: string): BudgetCheck | undefined {
    if (!this.countsTree(rootRunId)) return undefined
    return () => {
      const tree = this.#trees.get(rootRunId)
      if (!tree) return undefined
      const { maxTotalTurns, maxTotalTokens } = tree.limits
      if (maxTotalTurns !== undefined && tree.turns >= maxTotalTurns) {
        return { code: 'TREE_BUDGET_EXCEEDED', message: `The run tree used ${tree.turns} of its ${maxTotalTurns} turns.` }
      }
      if (maxTotalTokens !== undefined && tree.tokens >= maxTotalTokens) {
        return { code: 'TREE_BUDGET_EXCEEDED', message: `The run tree used ${tree.tokens} of its ${maxTotalTokens} tokens.` }
      }
      return undefined
    }
  }

  /** Cancels every run of a tree that lives in this process. */
  cancel(rootRunId: string, reason: string): void {
    for (const handle of [...(this.#trees.get(rootRunId)?.handles ?? [])]) handle.cancel(reason)
  }

  #remaining(rootRunId: string | undefined): RunBudget {
    const tree = rootRunId === undefined ? undefined : this.#trees.get(rootRunId)
    const used = tree ?? { turns: 0, tokens: 0 }
    const { maxTotalTurns, maxTotalTokens, maxTotalRuns } = this.limitsOf(rootRunId)
    return {
      ...(maxTotalTurns !== undefined ? { turns: maxTotalTurns - used.turns } : {}),
      ...(maxTotalTokens !== undefined ? { tokens: Math.max(1, maxTotalTokens - used.tokens) } : {}),
      ...(maxTotalRuns !== undefined ? { runs: maxTotalRuns - (tree?.runs ?? 0) } : {}),
    }
  }

  #own(): CarriedLimits {
    const { maxDepth, maxTotalTurns, maxTotalTokens, maxTotalRuns } = this.limits
    return {
      maxDepth,
      ...(maxTotalTurns === undefined ? {} : { maxTotalTurns }),
      ...(maxTotalTokens === undefined ? {} : { maxTotalTokens }),
      ...(maxTotalRuns === undefined ? {} : { maxTotalRuns }),
    }
  }

  /** Stops the tree once it is over its tokens. */
  #stopIfOver(rootRunId: string): void {
    const tree = this.#trees.get(rootRunId)
    const limit = tree?.limits.maxTotalTokens
    if (!tree || tree.exceeded || limit === undefined || tree.tokens <= limit) return
    tree.exceeded = `it used ${tree.tokens} of its ${limit} tokens`
    this.cancel(rootRunId, `the run tree went over its budget: ${tree.exceeded}`)
  }
}

/** The lower of each limit (a limit absent on one side is the other's). */
function lowest(a: CarriedLimits, b: CarriedLimits): CarriedLimits {
  const pick = (x: number | undefined, y: number | undefined) => (x === undefined ? y : y === undefined ? x : Math.min(x, y))
  const maxDepth = pick(a.maxDepth, b.maxDepth)
  const maxTotalTurns = pick(a.maxTotalTurns, b.maxTotalTurns)
  const maxTotalTokens = pick(a.maxTotalTokens, b.maxTotalTokens)
  const maxTotalRuns = pick(a.maxTotalRuns, b.maxTotalRuns)
  return {
    ...(maxDepth === undefined ? {} : { maxDepth }),
    ...(maxTotalTurns === undefined ? {} : { maxTotalTurns }),
    ...(maxTotalTokens === undefined ? {} : { maxTotalTokens }),
    ...(maxTotalRuns === undefined ? {} : { maxTotalRuns }),
  }
}

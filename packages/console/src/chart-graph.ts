/**
 * The agent machine as a graph to draw: its states and the transitions a reader needs to see the
 * loop, read from the machine itself. Two reductions keep the loop visible:
 *
 * - Exits collapsed: a final state entered from several states of one top-level state (`failed`
 *   from every wait's `work.error`, `cancelled` from `agent.cancel` and a hook's stop) gets one
 *   edge from that top-level state, labelled with every event that leads there.
 * - Shortcuts hidden: a transition that only skips pass-through states (states left at once by
 *   eventless transitions) is drawn as the path it skips. The machine takes those shortcuts to
 *   save microsteps; the states it skips are still where a run would be step by step.
 *
 * No layout here (that is done at build time, see scripts/build-assets.ts); `key` identifies the
 * graph, so a layout built for another machine is recognised as stale.
 */
import { createHash } from 'node:crypto'

/** The parts of an XState `StateNode` the graph reads. */
interface StateNodeLike {
  key: string
  path: string[]
  type: string
  parent?: StateNodeLike
  description?: string
  tags: string[]
  initial?: { target?: readonly StateNodeLike[] }
  states: Record<string, StateNodeLike>
  transitions: Map<string, readonly TransitionLike[]>
  always?: readonly TransitionLike[]
}

interface TransitionLike {
  eventType: string
  target?: readonly StateNodeLike[]
  guard?: unknown
  description?: string
}

export interface GraphNode {
  /** The state's path joined with dots (`running.turn.toolCalls.awaitingApproval`). */
  id: string
  key: string
  /** The compound state it is drawn in (`''` at the top). */
  parent: string
  tags: string[]
  description: string
  compound: boolean
  final: boolean
}

export interface GraphEdge {
  from: string
  to: string
  /** The events that take this transition (an eventless one: its description, else its guard's name in brackets). */
  label: string
  /** Stands for transitions from every state inside `from` (a collapsed exit). */
  collapsed: boolean
}

export interface ChartGraph {
  /** sha256 of the nodes and edges: equal graphs have equal keys. */
  key: string
  nodes: GraphNode[]
  edges: GraphEdge[]
}

export interface ChartNode extends GraphNode {
  x: number
  y: number
  width: number
  height: number
}

export interface ChartEdge extends GraphEdge {
  points: [number, number][]
  /** Where the label is drawn (its top-left corner), when it has one. */
  labelAt?: { x: number; y: number; width: number; height: number }
}

/** The graph laid out: what the page draws. */
export interface ChartLayout {
  key: string
  width: number
  height: number
  nodes: ChartNode[]
  edges: ChartEdge[]
}

interface Transition {
  from: StateNodeLike
  to: StateNodeLike
  /** `''` for an eventless transition. */
  event: string
  /** The guard's name, when it has one. */
  guard: string | undefined
  /** The transition's own description, when the machine gives one. */
  description: string | undefined
  /** Whether it has a guard at all (inline guards have no name). */
  guarded: boolean
}

/** The graph of `machine` (anything with an XState `root` state node). */
export function chartGraph(machine: { root: unknown }): ChartGraph {
  const root = machine.root as StateNodeLike
  const idOf = (node: StateNodeLike) => node.path.join('.')
  const all: StateNodeLike[] = []
  const collect = (node: StateNodeLike) => {
    for (const child of Object.values(node.states ?? {})) {
      all.push(child)
      collect(child)
    }
  }
  collect(root)

  const transitions: Transition[] = []
  for (const from of all) {
    const add = (transition: TransitionLike, event: string) => {
      for (const to of transition.target ?? []) {
        if (to !== root)
          transitions.push({
            from,
            to,
            event,
            guard: guardName(transition.guard),
            guarded: transition.guard !== undefined,
            description: transition.description?.trim() || undefined,
          })
      }
    }
    for (const [event, list] of from.transitions ?? new Map()) for (const transition of list) add(transition, event)
    for (const transition of from.always ?? []) add(transition, '')
  }

  const drawn = transitions.filter((t) => t.from !== t.to && !isShortcut(t, transitions))
  const exits = collapsibleExits(drawn)

  const edges = new Map<string, { from: string; to: string; labels: Set<string>; collapsed: boolean }>()
  for (const transition of drawn) {
    const exit = exits.get(transition)
    const from = exit ? idOf(exit) : idOf(transition.from)
    const to = idOf(transition.to)
    const key = `${from}->${to}`
    const edge = edges.get(key) ?? { from, to, labels: new Set<string>(), collapsed: exit !== undefined }
    // An eventless transition is told by what it says it is for, else by its guard.
    const label = transition.event || transition.description || (transition.guard ? `[${transition.guard}]` : '')
    if (label) edge.labels.add(label)
    edges.set(key, edge)
  }

  const nodes: GraphNode[] = all.map((node) => ({
    id: idOf(node),
    key: node.key,
    parent: node.path.slice(0, -1).join('.'),
    tags: [...(node.tags ?? [])],
    description: (node.description ?? '').replace(/\s+/g, ' ').trim(),
    compound: Object.keys(node.states ?? {}).length > 0,
    final: node.type === 'final',
  }))
  const edgeList: GraphEdge[] = [...edges.values()].map((edge) => ({
    from: edge.from,
    to: edge.to,
    label: [...edge.labels].join(' · '),
    collapsed: edge.collapsed,
  }))
  const key = createHash('sha256')
    .update(JSON.stringify({ nodes, edges: edgeList }))
    .digest('hex')
  return { key, nodes, edges: edgeList }
}

/** A named guard's name (`{ type: 'hasBeforeTurn' }` or `'hasBeforeTurn'`); inline guards have none. */
function guardName(guard: unknown): string | undefined {
  if (typeof guard === 'string') return guard
  if (guard && typeof guard === 'object' && typeof (guard as { type?: unknown }).type === 'string')
    return (guard as { type: string }).type
  return undefined
}

/** The state a transition to `node` ends in: a compound state's initial state, down to a leaf. */
function entered(node: StateNodeLike): StateNodeLike {
  let current = node
  for (let depth = 0; depth < 32; depth++) {
    const initial = current.initial?.target?.[0]
    if (!initial || Object.keys(current.states ?? {}).length === 0) return current
    current = initial
  }
  return current
}

/** A state the machine leaves at once: only eventless transitions, one of them unguarded. */
function passThrough(node: StateNodeLike): boolean {
  const always = node.always ?? []
  return always.some((t) => t.guard === undefined) && (node.transitions?.size ?? 0) === 0
}

function inside(node: StateNodeLike, compound: StateNodeLike): boolean {
  for (let current = node.parent; current; current = current.parent) if (current === compound) return true
  return false
}

/**
 * Whether `shortcut` only skips pass-through states: the same event (or none) leads from its
 * source, through pass-through states only, to the state it enters. The path must read as the
 * same step taken slowly, so it may not
 * - take a guarded branch from one pass-through state to another beside it (a correction, an
 *   invalid call: another outcome, not the same step),
 * - go back to where a compound state starts and then on inside it (that is the next tool call,
 *   not this one), nor pass any state twice.
 * A state's unguarded transition is its ordinary exit, never a shortcut.
 */
function isShortcut(shortcut: Transition, transitions: Transition[]): boolean {
  if (!shortcut.guarded) return false
  const goal = entered(shortcut.to)
  const outOf = (node: StateNodeLike, event: string) => transitions.filter((t) => t.from === node && t.event === event)
  const search = (step: Transition, path: Set<StateNodeLike>, closed: StateNodeLike | undefined): boolean => {
    const to = entered(step.to)
    if (path.has(to) || (closed && inside(to, closed))) return false
    if (step.guarded && passThrough(to) && to.parent === step.from.parent) return false
    const parent = to.parent
    const loopsBack = parent !== undefined && parent.initial?.target?.[0] === to && inside(step.from, parent)
    if (to === goal) return path.size > 1
    if (!passThrough(to) || path.size > 32) return false
    const next = new Set(path).add(to)
    return outOf(to, '').some((t) => search(t, next, loopsBack ? parent : closed))
  }
  return outOf(shortcut.from, shortcut.event).some(
    (first) => first !== shortcut && entered(first.to) !== goal && search(first, new Set([shortcut.from]), undefined),
  )
}

/**
 * Transitions into a final state that several states of one top-level state lead to, mapped to
 * that top-level state (the edge drawn from it stands for all of them).
 */
function collapsibleExits(transitions: Transition[]): Map<Transition, StateNodeLike> {
  // The state one level under the root that `node` is in (or is).
  const topOf = (node: StateNodeLike): StateNodeLike => {
    let current = node
    while (current.parent && current.path.length > 1) current = current.parent
    return current
  }
  const byExit = new Map<string, Transition[]>()
  for (const transition of transitions) {
    if (transition.to.type !== 'final') continue
    const top = topOf(transition.from)
    if (Object.keys(top.states ?? {}).length === 0) continue
    const key = `${top.path.join('.')}->${transition.to.path.join('.')}`
    byExit.set(key, [...(byExit.get(key) ?? []), transition])
  }
  const exits = new Map<Transition, StateNodeLike>()
  for (const group of byExit.values()) {
    const sources = new Set(group.map((t) => t.from))
    if (sources.size < 2) continue
    for (const transition of group) exits.set(transition, topOf(transition.from))
  }
  return exits
}

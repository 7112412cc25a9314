/**
 * A statechart as Mermaid `stateDiagram-v2`, generated from the machine itself (its state nodes and
 * transitions), for docs and terminals that cannot reach the hosted Stately inspector. States
 * tagged `hook` (the agent's hook points), `wait`, `human`, `tool` or `model` are annotated and
 * styled, and each state carries its `description`.
 */

/** The parts of an XState `StateNode` the generator reads. */
interface StateNodeLike {
  key: string
  id: string
  path: string[]
  type: 'atomic' | 'compound' | 'parallel' | 'final' | 'history'
  description?: string
  tags: string[]
  states: Record<string, StateNodeLike>
  initial?: { target: readonly StateNodeLike[] }
  transitions: Map<string, readonly TransitionLike[]>
  always?: readonly TransitionLike[]
  after?: readonly (TransitionLike & { delay?: unknown })[]
  invoke?: readonly { id: string; src: unknown }[]
}

interface TransitionLike {
  eventType: string
  target?: readonly StateNodeLike[]
  guard?: unknown
}

export interface MermaidOptions {
  /** Layout direction. Default `TB`. */
  direction?: 'TB' | 'LR'
  /** Add each state's `description` as its text. Default true. */
  descriptions?: boolean
  /** Label transitions with their guards (`[hasBeforeTurn]`). Default true. */
  guards?: boolean
}

/** Tags shown on states, in this order, with the classes that style them. */
const TAG_STYLES: [tag: string, style: string][] = [
  ['hook', 'fill:#fff3c4,stroke:#b7791f,stroke-width:2px'],
  ['human', 'fill:#fde2e2,stroke:#c53030'],
  ['tool', 'fill:#e6fffa,stroke:#2c7a7b'],
  ['model', 'fill:#ebf4ff,stroke:#434190'],
  ['wait', 'stroke-dasharray:4 2'],
]

/**
 * Renders `machine` (an XState machine: anything with a `root` state node) as Mermaid. Every state
 * is declared inside its parent's block first; transitions follow at the top level, so a transition
 * to a state in another compound state cannot re-create that state in the wrong block.
 */
export function statechartToMermaid(machine: { root: unknown }, options: MermaidOptions = {}): string {
  const root = machine.root as StateNodeLike
  const showDescriptions = options.descriptions ?? true
  const showGuards = options.guards ?? true
  const nodes: StateNodeLike[] = []
  const walk = (node: StateNodeLike) => {
    for (const child of Object.values(node.states ?? {})) {
      nodes.push(child)
      walk(child)
    }
  }
  walk(root)
  const keyCount = new Map<string, number>()
  for (const node of nodes) keyCount.set(node.key, (keyCount.get(node.key) ?? 0) + 1)
  const ids = new Map<StateNodeLike, string>()
  for (const node of nodes) {
    const raw = keyCount.get(node.key) === 1 ? node.key : node.path.join('_')
    ids.set(node, mermaidId(raw))
  }
  const idOf = (node: StateNodeLike) => ids.get(node) ?? mermaidId(node.path.join('_'))

  const lines: string[] = ['stateDiagram-v2', `  direction ${options.direction ?? 'TB'}`]
  if (root.description) lines.push(`  %% ${oneLine(root.description)}`)

  const declare = (node: StateNodeLike, indent: string) => {
    const children = Object.values(node.states ?? {})
    if (node !== root) {
      const id = idOf(node)
      if (children.length > 0) lines.push(`${indent}state ${id} {`)
      else if (id !== node.key) lines.push(`${indent}state "${label(node.key)}" as ${id}`)
    }
    const inner = node === root ? indent : `${indent}  `
    const initial = node.initial?.target?.[0]
    if (initial && children.length > 0) lines.push(`${inner}[*] --> ${idOf(initial)}`)
    for (const child of children) declare(child, inner)
    if (node !== root) {
      const id = idOf(node)
      const text = stateText(node, showDescriptions)
      if (children.length > 0) {
        lines.push(`${indent}}`)
        // Mermaid gives a composite state a label only; its description becomes a comment.
        if (text) lines.push(`${indent}%% ${id}: ${text}`)
      } else {
        // Every leaf is declared in its own block: a transition at the top level must not be its first
        // mention (Mermaid would put it at the top level). Two descriptions render as name + text.
        if (id === node.key) lines.push(`${indent}${id} : ${id}`)
        if (text) lines.push(`${indent}${id} : ${text}`)
        if (node.type === 'final') lines.push(`${indent}${id} --> [*]`)
      }
    }
  }
  declare(root, '  ')

  lines.push('')
  for (const node of nodes) {
    const from = idOf(node)
    const invokes = new Map(
      (node.invoke ?? []).map((invoke) => [invoke.id, typeof invoke.src === 'string' ? invoke.src : 'actor']),
    )
    const seen = new Set<string>()
    const emit = (transition: TransitionLike, text: string) => {
      for (const target of transition.target ?? []) {
        const guard = showGuards ? guardName(transition.guard) : ''
        const labelText = [text, guard ? `[${guard}]` : ''].filter(Boolean).join(' ')
        const line = `  ${from} --> ${idOf(target)}${labelText ? ` : ${label(labelText)}` : ''}`
        if (!seen.has(line)) {
          seen.add(line)
          lines.push(line)
        }
      }
    }
    for (const [eventType, transitions] of node.transitions ?? new Map()) {
      for (const transition of transitions) emit(transition, eventLabel(eventType, invokes))
    }
    for (const transition of node.always ?? []) emit(transition, '')
  }

  const byTag = new Map<string, string[]>()
  for (const node of nodes) {
    for (const [tag] of TAG_STYLES) if (node.tags?.includes(tag)) byTag.set(tag, [...(byTag.get(tag) ?? []), idOf(node)])
  }
  if (byTag.size > 0) lines.push('')
  for (const [tag, style] of TAG_STYLES) {
    const members = byTag.get(tag)
    if (!members) continue
    lines.push(`  classDef ${tag} ${style}`)
    lines.push(`  class ${members.join(',')} ${tag}`)
  }
  return `${lines.join('\n')}\n`
}

/** The state's box text: its tags (`hook point`, `wait`...) and its description. */
function stateText(node: StateNodeLike, descriptions: boolean): string {
  const tags = node.tags ?? []
  const marks: string[] = []
  if (tags.includes('hook')) marks.push('hook point')
  for (const tag of tags) if (tag !== 'hook') marks.push(tag)
  const head = marks.length > 0 ? `[${marks.join(', ')}]` : ''
  const description = descriptions && node.description ? oneLine(node.description) : ''
  return label([head, description].filter(Boolean).join(' '))
}

function eventLabel(eventType: string, invokes: Map<string, string>): string {
  const done = /^xstate\.done\.actor\.(.+)$/.exec(eventType)
  if (done) return `done ${invokes.get(done[1] as string) ?? 'actor'}`
  const error = /^xstate\.error\.actor\.(.+)$/.exec(eventType)
  if (error) return `error ${invokes.get(error[1] as string) ?? 'actor'}`
  const after = /^xstate\.after\.([^.]+)\./.exec(eventType)
  if (after) return `after ${after[1]}`
  return eventType
}

function guardName(guard: unknown): string {
  if (guard === undefined || guard === null) return ''
  if (typeof guard === 'string') return guard
  if (typeof guard === 'function') return guard.name && guard.name !== 'guard' ? guard.name : 'guard'
  if (typeof guard === 'object' && typeof (guard as { type?: unknown }).type === 'string') {
    const { type, params } = guard as { type: string; params?: unknown }
    // A guard asked with a value (`{ type: 'modelAnswered', params: 'tool-calls' }`) shows it.
    return typeof params === 'string' || typeof params === 'number' || typeof params === 'boolean' ? `${type}(${params})` : type
  }
  return 'guard'
}

function mermaidId(raw: string): string {
  const id = raw.replace(/[^A-Za-z0-9_]/g, '_')
  return /^[A-Za-z_]/.test(id) ? id : `s_${id}`
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim()
}

/** Text Mermaid accepts after `:` and inside quotes: no colons, semicolons, quotes, braces or `#`. */
function label(text: string): string {
  return text
    .replace(/[’‘]/g, "'")
    .replace(/[:;]/g, ' -')
    .replace(/["{}#<>]/g, '')
    .replace(/\s+/g, ' ')
    .trim()
}

/**
 * The agent machine as a drawing: its state nodes and transitions, read from the machine itself
 * (the same walk `statechartToMermaid` does), laid out by ELK on the server, so the page only
 * draws boxes and lines and ships no layout engine.
 */
import * as elkjs from 'elkjs/lib/elk.bundled.js'
import type { ElkExtendedEdge, ElkNode } from 'elkjs/lib/elk-api.js'

// elkjs is CommonJS: Node hands its class over as the default export, its types describe an ES module.
const ELK = ((elkjs as { default?: unknown }).default ?? elkjs) as new () => { layout(graph: ElkNode): Promise<ElkNode> }

/** The parts of an XState `StateNode` the layout reads. */
interface StateNodeLike {
  key: string
  path: string[]
  type: string
  description?: string
  tags: string[]
  states: Record<string, StateNodeLike>
  transitions: Map<string, readonly { eventType: string; target?: readonly StateNodeLike[] }[]>
  always?: readonly { target?: readonly StateNodeLike[] }[]
}

export interface ChartNode {
  /** The state's path joined with dots (`running.turn.toolCalls.awaitingApproval`). */
  id: string
  key: string
  tags: string[]
  description: string
  compound: boolean
  final: boolean
  x: number
  y: number
  width: number
  height: number
}

export interface ChartEdge {
  from: string
  to: string
  /** The events that take this transition. */
  label: string
  points: [number, number][]
}

export interface ChartLayout {
  width: number
  height: number
  nodes: ChartNode[]
  edges: ChartEdge[]
}

const CHAR_WIDTH = 7.2
const LEAF_HEIGHT = 30
const HEADER = 26

/** Lays out `machine` (anything with an XState `root` state node). */
export async function layoutStatechart(machine: { root: unknown }): Promise<ChartLayout> {
  const root = machine.root as StateNodeLike
  const info = new Map<string, { node: StateNodeLike; compound: boolean }>()
  const idOf = (node: StateNodeLike) => node.path.join('.')

  const toElk = (node: StateNodeLike): ElkNode => {
    const children = Object.values(node.states ?? {})
    const compound = children.length > 0
    info.set(idOf(node), { node, compound })
    const width = Math.max(70, node.key.length * CHAR_WIDTH + 24)
    return compound
      ? {
          id: idOf(node),
          layoutOptions: { 'elk.padding': `[top=${HEADER},left=10,bottom=10,right=10]` },
          children: children.map(toElk),
          width,
        }
      : { id: idOf(node), width, height: LEAF_HEIGHT }
  }

  const edges = new Map<string, { from: string; to: string; events: Set<string> }>()
  const walk = (node: StateNodeLike) => {
    const add = (target: StateNodeLike, eventType: string) => {
      const from = idOf(node)
      const to = idOf(target)
      if (from === to || to === '') return
      const key = `${from}->${to}`
      const edge = edges.get(key) ?? { from, to, events: new Set<string>() }
      if (eventType) edge.events.add(eventType)
      edges.set(key, edge)
    }
    for (const [eventType, transitions] of node.transitions ?? new Map()) {
      for (const transition of transitions) for (const target of transition.target ?? []) add(target, eventType)
    }
    for (const transition of node.always ?? []) for (const target of transition.target ?? []) add(target, '')
    for (const child of Object.values(node.states ?? {})) walk(child)
  }
  for (const child of Object.values(root.states ?? {})) walk(child)

  const edgeList = [...edges.values()]
  const graph: ElkNode = {
    id: 'root',
    layoutOptions: {
      'elk.algorithm': 'layered',
      'elk.direction': 'DOWN',
      'elk.hierarchyHandling': 'INCLUDE_CHILDREN',
      'elk.layered.spacing.nodeNodeBetweenLayers': '28',
      'elk.spacing.nodeNode': '18',
      'elk.edgeRouting': 'ORTHOGONAL',
      'elk.json.shapeCoords': 'ROOT',
      'elk.json.edgeCoords': 'ROOT',
    },
    children: Object.values(root.states ?? {}).map(toElk),
    edges: edgeList.map((edge, index): ElkExtendedEdge => ({ id: `e${index}`, sources: [edge.from], targets: [edge.to] })),
  }
  const laid = await new ELK().layout(graph)

  const nodes: ChartNode[] = []
  const collect = (elk: ElkNode) => {
    for (const child of elk.children ?? []) {
      const entry = info.get(child.id)
      if (entry) {
        nodes.push({
          id: child.id,
          key: entry.node.key,
          tags: [...(entry.node.tags ?? [])],
          description: (entry.node.description ?? '').replace(/\s+/g, ' ').trim(),
          compound: entry.compound,
          final: entry.node.type === 'final',
          x: child.x ?? 0,
          y: child.y ?? 0,
          width: child.width ?? 0,
          height: child.height ?? 0,
        })
      }
      collect(child)
    }
  }
  collect(laid)
  const laidEdges = new Map((laid.edges ?? []).map((edge) => [edge.id, edge]))
  const chartEdges: ChartEdge[] = edgeList.map((edge, index) => {
    const section = laidEdges.get(`e${index}`)?.sections?.[0]
    const points: [number, number][] = section
      ? [section.startPoint, ...(section.bendPoints ?? []), section.endPoint].map((p) => [p.x, p.y])
      : []
    return { from: edge.from, to: edge.to, label: [...edge.events].join(', '), points }
  })
  return { width: laid.width ?? 0, height: laid.height ?? 0, nodes, edges: chartEdges }
}

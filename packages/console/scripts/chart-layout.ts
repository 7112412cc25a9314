/**
 * Lays out the agent machine's graph at build time: ELK places the states and routes the edges,
 * then each edge's label is put beside one of its segments where it covers no state and no other
 * label. The console ships the result (assets/chart.json) and never loads a layout engine.
 */
import * as elkjs from 'elkjs/lib/elk.bundled.js'
import type { ElkExtendedEdge, ElkNode } from 'elkjs/lib/elk-api.js'
import type { ChartEdge, ChartGraph, ChartLayout, ChartNode, GraphNode } from '../src/chart-graph.ts'

// elkjs is CommonJS: Node hands its class over as the default export, its types describe an ES module.
const ELK = ((elkjs as { default?: unknown }).default ?? elkjs) as new () => { layout(graph: ElkNode): Promise<ElkNode> }

/** Text metrics of the page's chart fonts (11 px states, 10 px labels: page-html.ts), generous so text never overflows. */
const CHAR_WIDTH = 6.6
const LEAF_HEIGHT = 24
const HEADER = 20
const LABEL_CHAR_WIDTH = 5.6
const LABEL_LINE = 12
/** A label wider than this is broken into lines. */
const LABEL_MAX_CHARS = 30

const LAYERED: Record<string, string> = {
  'elk.algorithm': 'layered',
  'elk.direction': 'DOWN',
  // States are listed in the loop's order; breaking cycles depth-first from the start keeps that
  // order top to bottom, so only the edges back round the loop point up.
  'elk.layered.cycleBreaking.strategy': 'DEPTH_FIRST',
  'elk.layered.nodePlacement.strategy': 'LINEAR_SEGMENTS',
  'elk.edgeRouting': 'ORTHOGONAL',
  'elk.layered.spacing.nodeNodeBetweenLayers': '26',
  'elk.layered.spacing.edgeNodeBetweenLayers': '10',
  'elk.layered.spacing.edgeEdgeBetweenLayers': '6',
  'elk.spacing.edgeEdge': '8',
  'elk.spacing.edgeNode': '10',
  'elk.spacing.nodeNode': '14',
}

interface Box {
  x: number
  y: number
  width: number
  height: number
}

export async function layoutChart(graph: ChartGraph): Promise<ChartLayout> {
  const children = new Map<string, GraphNode[]>()
  for (const node of graph.nodes) children.set(node.parent, [...(children.get(node.parent) ?? []), node])
  const toElk = (node: GraphNode): ElkNode => {
    if (!node.compound)
      return { id: node.id, width: Math.max(56, Math.ceil(node.key.length * CHAR_WIDTH + 20)), height: LEAF_HEIGHT }
    return {
      id: node.id,
      layoutOptions: { ...LAYERED, 'elk.padding': `[top=${HEADER + 4},left=10,bottom=10,right=10]` },
      children: (children.get(node.id) ?? []).map(toElk),
    }
  }
  const laid = await new ELK().layout({
    id: 'root',
    layoutOptions: {
      ...LAYERED,
      'elk.hierarchyHandling': 'INCLUDE_CHILDREN',
      'elk.padding': '[top=4,left=4,bottom=4,right=4]',
      'elk.json.shapeCoords': 'ROOT',
      'elk.json.edgeCoords': 'ROOT',
    },
    children: (children.get('') ?? []).map(toElk),
    edges: graph.edges.map((edge, index): ElkExtendedEdge => ({ id: `e${index}`, sources: [edge.from], targets: [edge.to] })),
  })

  const byId = new Map(graph.nodes.map((node) => [node.id, node]))
  const nodes: ChartNode[] = []
  const collect = (elk: ElkNode) => {
    for (const child of elk.children ?? []) {
      const node = byId.get(child.id)
      if (node) nodes.push({ ...node, x: child.x ?? 0, y: child.y ?? 0, width: child.width ?? 0, height: child.height ?? 0 })
      collect(child)
    }
  }
  collect(laid)
  const laidEdges = new Map((laid.edges ?? []).map((edge) => [edge.id, edge]))
  const edges: ChartEdge[] = graph.edges.map((edge, index) => {
    const section = laidEdges.get(`e${index}`)?.sections?.[0]
    const points: [number, number][] = section
      ? [section.startPoint, ...(section.bendPoints ?? []), section.endPoint].map((p) => [round(p.x), round(p.y)])
      : []
    return { ...edge, label: wrap(edge.label), points }
  })
  const bounds = placeLabels(nodes, edges, { x: 0, y: 0, width: laid.width ?? 0, height: laid.height ?? 0 })
  // A label out past the top or left edge: move everything so the drawing starts at 0, 0.
  const dx = Math.max(0, -bounds.x)
  const dy = Math.max(0, -bounds.y)
  if (dx > 0 || dy > 0) {
    for (const node of nodes) Object.assign(node, { x: node.x + dx, y: node.y + dy })
    for (const edge of edges) {
      edge.points = edge.points.map(([x, y]) => [round(x + dx), round(y + dy)])
      if (edge.labelAt) Object.assign(edge.labelAt, { x: round(edge.labelAt.x + dx), y: round(edge.labelAt.y + dy) })
    }
  }
  return {
    key: graph.key,
    width: Math.ceil(bounds.width + bounds.x + dx),
    height: Math.ceil(bounds.height + bounds.y + dy),
    nodes,
    edges,
  }
}

/**
 * Puts each label beside a segment of its edge: the first place (nearest the edge's source, where
 * a reader looks for why a state is left) that covers no state, state title or label, crossing
 * as few other edges as it can. A label that finds no free place goes where it covers least.
 * Returns the drawing's bounds (a label may stick out of ELK's).
 */
function placeLabels(nodes: ChartNode[], edges: ChartEdge[], area: Box): Box {
  const solid: Box[] = [
    ...nodes.filter((n) => !n.compound).map((n) => grow(n, 2)),
    ...nodes.filter((n) => n.compound).map((n) => ({ x: n.x, y: n.y, width: n.key.length * CHAR_WIDTH + 16, height: HEADER })),
  ]
  const segments = edges.flatMap((edge) =>
    edge.points.slice(1).map((point, i) => ({ edge, a: edge.points[i] as [number, number], b: point })),
  )
  // Short edges first: they have the fewest places.
  const order = edges.filter((e) => e.label && e.points.length >= 2).sort((a, b) => pathLength(a) - pathLength(b))
  let bounds = { ...area }
  for (const edge of order) {
    const lines = edge.label.split('\n')
    const width = Math.ceil(Math.max(...lines.map((line) => line.length)) * LABEL_CHAR_WIDTH + 6)
    const height = lines.length * LABEL_LINE + 2
    let best: { box: Box; cost: number } | undefined
    edge.points.slice(1).forEach((end, i) => {
      const start = edge.points[i] as [number, number]
      for (const box of candidates(start, end, width, height)) {
        const covers = solid.filter((s) => overlaps(s, box)).length
        const crossings = segments.filter((s) => s.edge !== edge && crosses(s.a, s.b, box)).length
        // Far from the source costs a little: ties go to the first segments.
        const cost = covers * 1000 + crossings * 10 + i
        if (!best || cost < best.cost) best = { box, cost }
      }
    })
    if (!best) continue
    if (best.cost >= 1000) console.warn(`chart: the label of ${edge.from} -> ${edge.to} covers a state or label`)
    edge.labelAt = { x: round(best.box.x), y: round(best.box.y), width, height }
    solid.push(grow(best.box, 1))
    bounds = union(bounds, best.box)
  }
  return bounds
}

/** Places for a label along the segment start → end: beside it, at a few points along it. */
function candidates(start: [number, number], end: [number, number], width: number, height: number): Box[] {
  const [x1, y1] = start
  const [x2, y2] = end
  const out: Box[] = []
  const along = [0.5, 0.25, 0.75]
  if (y1 === y2) {
    for (const t of along) {
      const cx = x1 + (x2 - x1) * t
      out.push({ x: cx - width / 2, y: y1 - height - 1, width, height }, { x: cx - width / 2, y: y1 + 1, width, height })
    }
  } else if (x1 === x2) {
    for (const t of along) {
      const cy = y1 + (y2 - y1) * t
      out.push({ x: x1 + 3, y: cy - height / 2, width, height }, { x: x1 - width - 3, y: cy - height / 2, width, height })
    }
  }
  return out
}

/** Lines of at most LABEL_MAX_CHARS: breaks at the ` · ` between events first, then between words. */
function wrap(label: string): string {
  if (label.length <= LABEL_MAX_CHARS) return label
  const lines: string[] = []
  for (const part of label.split(' · ')) {
    const last = lines.at(-1)
    if (last !== undefined && last.length + part.length + 3 <= LABEL_MAX_CHARS) {
      lines[lines.length - 1] = `${last} · ${part}`
      continue
    }
    let line = ''
    for (const word of part.split(' ')) {
      if (line && line.length + word.length + 1 > LABEL_MAX_CHARS) {
        lines.push(line)
        line = word
      } else line = line ? `${line} ${word}` : word
    }
    lines.push(line)
  }
  return lines.join('\n')
}

function pathLength(edge: ChartEdge): number {
  let length = 0
  for (let i = 1; i < edge.points.length; i++) {
    const [x1, y1] = edge.points[i - 1] as [number, number]
    const [x2, y2] = edge.points[i] as [number, number]
    length += Math.abs(x2 - x1) + Math.abs(y2 - y1)
  }
  return length
}

function overlaps(a: Box, b: Box): boolean {
  return a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height
}

/** Whether an axis-parallel segment passes through the box. */
function crosses(a: [number, number], b: [number, number], box: Box): boolean {
  const line = {
    x: Math.min(a[0], b[0]),
    y: Math.min(a[1], b[1]),
    width: Math.abs(b[0] - a[0]) || 0.1,
    height: Math.abs(b[1] - a[1]) || 0.1,
  }
  return overlaps(line, box)
}

function grow(box: Box, by: number): Box {
  return { x: box.x - by, y: box.y - by, width: box.width + 2 * by, height: box.height + 2 * by }
}

function union(a: Box, b: Box): Box {
  const x = Math.min(a.x, b.x)
  const y = Math.min(a.y, b.y)
  return { x, y, width: Math.max(a.x + a.width, b.x + b.width) - x, height: Math.max(a.y + a.height, b.y + b.height) - y }
}

function round(value: number): number {
  return Math.round(value * 10) / 10
}

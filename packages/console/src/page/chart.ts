/// <reference lib="dom" />
/** The statechart drawing: boxes and lines from the server's layout; the active states highlighted. */
import type { ChartLayout } from '../chart-graph.ts'
import { svg } from './dom.ts'

export interface ChartView {
  readonly element: SVGElement
  /** Highlights the states of `value` (an XState state value); anything else clears the highlight. */
  show(value: unknown): void
}

export function createChartView(layout: ChartLayout): ChartView {
  const margin = 8
  const root = svg('svg', {
    width: Math.ceil(layout.width + margin * 2),
    height: Math.ceil(layout.height + margin * 2),
    viewBox: `${-margin} ${-margin} ${Math.ceil(layout.width + margin * 2)} ${Math.ceil(layout.height + margin * 2)}`,
    role: 'img',
    'aria-label': 'agent statechart',
    // Scaled down to the column it is in, never up.
    style: `max-width: ${Math.ceil(layout.width + margin * 2)}px`,
  })
  root.append(
    svg(
      'defs',
      {},
      svg(
        'marker',
        { id: 'arrow', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 6, markerHeight: 6, orient: 'auto-start-reverse' },
        svg('path', { d: 'M 0 0 L 10 5 L 0 10 z', fill: '#a0aec0', stroke: 'none' }),
      ),
    ),
  )
  const nodes = new Map<string, SVGElement>()
  // Compound states first, so leaves and lines are drawn over them.
  const ordered = [...layout.nodes].sort((a, b) => Number(b.compound) - Number(a.compound))
  for (const node of ordered) {
    const group = svg(
      'g',
      {
        class: ['node', node.compound ? 'compound' : 'leaf', ...node.tags].join(' '),
        'data-state': node.id,
      },
      svg(
        'title',
        {},
        [node.id, node.tags.length > 0 ? `[${node.tags.join(', ')}]` : '', node.description].filter(Boolean).join('\n'),
      ),
      svg('rect', { x: node.x, y: node.y, width: node.width, height: node.height, rx: node.compound ? 8 : 11 }),
      svg(
        'text',
        node.compound
          ? { x: node.x + 10, y: node.y + 15 }
          : { x: node.x + node.width / 2, y: node.y + node.height / 2 + 4, 'text-anchor': 'middle' },
        node.key,
      ),
    )
    nodes.set(node.id, group)
    if (node.compound) root.append(group)
  }
  for (const edge of layout.edges) {
    if (edge.points.length < 2) continue
    const d = edge.points.map(([x, y], index) => `${index === 0 ? 'M' : 'L'} ${x} ${y}`).join(' ')
    const attributes = { 'data-from': edge.from, 'data-to': edge.to, class: edge.collapsed ? 'edge exit' : 'edge' }
    const group = svg('g', attributes, svg('path', { d }), svg('title', {}, edge.label.replace(/\n/g, ' ')))
    if (edge.labelAt && edge.label) {
      const { x, y, width, height } = edge.labelAt
      const lines = edge.label.split('\n')
      const text = svg('text', { class: 'label', 'text-anchor': 'middle' })
      for (const [i, line] of lines.entries()) text.append(svg('tspan', { x: x + width / 2, y: y + 10 + i * 12 }, line))
      group.append(svg('rect', { class: 'label-bg', x, y, width, height, rx: 3 }), text)
    }
    root.append(group)
  }
  for (const node of ordered) if (!node.compound) root.append(nodes.get(node.id) as SVGElement)

  return {
    element: root,
    show(value) {
      const active = new Set(activeStates(value))
      for (const [id, group] of nodes) group.classList.toggle('active', active.has(id))
    },
  }
}

/** `{ running: { turn: 'callingModel' } }` → `running`, `running.turn`, `running.turn.callingModel`. */
export function activeStates(value: unknown, prefix = '', depth = 0): string[] {
  if (depth > 16) return []
  if (typeof value === 'string') return [`${prefix}${value}`]
  if (!value || typeof value !== 'object' || Array.isArray(value)) return []
  const out: string[] = []
  for (const [key, child] of Object.entries(value)) {
    out.push(`${prefix}${key}`, ...activeStates(child, `${prefix}${key}.`, depth + 1))
  }
  return out
}

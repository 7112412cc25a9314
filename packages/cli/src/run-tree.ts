/**
 * `signalbox runs --tree`: stored runs as the trees they form. A run's parent is the last run of
 * its `runPath`; a run whose parent is not in the listing (not stored, in another store, pruned,
 * or filtered out) heads its own tree and says whose child it is.
 */
import type { Colors } from './output.ts'

/** What the tree needs of a listed run (a `RunRow` of `runs.ts`). */
export interface TreeRow {
  runId: string
  agentId: string
  runPath: string[]
  status: string
  owner: string | undefined
  leaseExpired: boolean | undefined
  leaseExpiresAt: number | undefined
  savedAt: number
}

export interface RunTreeNode<R extends TreeRow> {
  row: R
  /** The parent's run id when the parent is not in the listing. */
  missingParent: string | undefined
  children: RunTreeNode<R>[]
}

const FINISHED = new Set(['done', 'failed', 'cancelled'])

/** The listing as trees: roots in the order they were saved, children likewise under each. */
export function buildRunTrees<R extends TreeRow>(rows: readonly R[]): RunTreeNode<R>[] {
  const nodes = new Map<string, RunTreeNode<R>>()
  const ordered = [...rows].sort((a, b) => a.savedAt - b.savedAt)
  for (const row of ordered) nodes.set(row.runId, { row, missingParent: undefined, children: [] })
  const roots: RunTreeNode<R>[] = []
  for (const row of ordered) {
    const node = nodes.get(row.runId) as RunTreeNode<R>
    const parentId = row.runPath.at(-1)
    const parent = parentId === undefined || parentId === row.runId ? undefined : nodes.get(parentId)
    if (parent !== undefined) parent.children.push(node)
    else {
      node.missingParent = parentId
      roots.push(node)
    }
  }
  return roots
}

/** A node as JSON: the row, its missing parent if any, its children nested. */
export function treeJson<R extends TreeRow>(node: RunTreeNode<R>): object {
  return {
    ...node.row,
    type: 'tree',
    ...(node.missingParent ? { parentRunId: node.missingParent, parentStored: false } : {}),
    children: node.children.map(treeJson),
  }
}

export interface TreeLineParts<R extends TreeRow> {
  /** The run's own lines under its head line (what it waits for, why it is parked), unindented. */
  details(row: R): string[]
  clockTime(at: number): string
}

/**
 * The trees as text: one head line per run (`agent run · status · host (lease)`), its details
 * under it, children drawn under their parent with `├─` / `└─`; a parent still running with
 * children not finished says which it waits for.
 */
export function renderRunTrees<R extends TreeRow>(roots: RunTreeNode<R>[], c: Colors, parts: TreeLineParts<R>): string[] {
  const lines: string[] = []
  const visit = (node: RunTreeNode<R>, lead: string, branch: string, depth: number) => {
    const { row } = node
    const color = row.status === 'waiting' ? c.yellow : row.status === 'failed' || row.status === 'parked' ? c.red : c.cyan
    const owner =
      row.owner === undefined
        ? c.dim('no owner')
        : row.leaseExpired
          ? `${row.owner} ${c.red('(lease expired)')}`
          : `${row.owner} ${c.dim(`(lease until ${parts.clockTime(row.leaseExpiresAt as number)})`)}`
    const path = depth === 0 && node.missingParent ? c.dim(` · child of ${node.missingParent} (not in this listing)`) : ''
    lines.push(`${lead}${branch}${c.magenta(row.agentId)} ${row.runId}  ${color(row.status)}  ${owner}${path}`)
    const under = `${lead}${branch === '' ? '' : branch === '└─ ' ? '   ' : '│  '}`
    const detailLead = `${under}${node.children.length > 0 ? '│  ' : '   '}`
    const open = node.children.filter((child) => !FINISHED.has(child.row.status))
    const details = [...parts.details(row)]
    if (!FINISHED.has(row.status) && open.length > 0) {
      details.push(`waits for ${open.map((child) => `${child.row.agentId} ${child.row.runId}`).join(', ')}`)
    }
    for (const detail of details) lines.push(`${detailLead}${c.dim('·')} ${detail}`)
    node.children.forEach((child, i) => {
      visit(child, under, i === node.children.length - 1 ? '└─ ' : '├─ ', depth + 1)
    })
  }
  for (const root of roots) visit(root, '', '', 0)
  return lines
}

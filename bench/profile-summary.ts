/**
 * Summarizes a V8 `.cpuprofile` (from `node --cpu-prof`): top functions by self time and by
 * inclusive time, with `file:line` in the original TypeScript. tsx runs minified code, so
 * positions are mapped back through the source maps tsx keeps in its cache
 * (`$TMPDIR/tsx-<uid>/`); when no map is found the generated position is shown.
 *
 *   node --cpu-prof --cpu-prof-dir=.tmp/prof --import tsx bench/index.ts --only in-process
 *   pnpm tsx bench/profile-summary.ts .tmp/prof/<file>.cpuprofile [--top 30] [--filter packages/core]
 */
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { SourceMap } from 'node:module'
import { tmpdir, userInfo } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'

interface CallFrame {
  functionName: string
  url: string
  lineNumber: number
  columnNumber: number
}
interface ProfileNode {
  id: number
  callFrame: CallFrame
  children?: number[]
}
interface Profile {
  nodes: ProfileNode[]
  samples: number[]
  timeDeltas: number[]
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { top: { type: 'string', default: '30' }, filter: { type: 'string' } },
})
const file = positionals[0]
if (!file) {
  console.error('usage: tsx bench/profile-summary.ts <file.cpuprofile> [--top N] [--filter substring]')
  process.exit(2)
}
const top = Number(values.top)
// Piped into `head`: stop quietly.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(0)
  throw error
})
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile

/** Source maps tsx cached for each source file (newest entry wins). */
const maps = new Map<string, SourceMap>()
try {
  const dir = join(tmpdir(), `tsx-${userInfo().uid}`)
  const entries = readdirSync(dir)
    .map((name) => join(dir, name))
    .sort((a, b) => statSync(a).mtimeMs - statSync(b).mtimeMs)
  for (const path of entries) {
    try {
      const cached = JSON.parse(readFileSync(path, 'utf8')) as { map?: { sources?: string[] } }
      const source = cached.map?.sources?.[0]
      if (source && cached.map) maps.set(source, new SourceMap(cached.map as never))
    } catch {
      // not a cache entry we understand
    }
  }
} catch {
  // no tsx cache: generated positions only
}

const shortUrl = (url: string) =>
  url
    .replace(/^file:\/\//, '')
    .replace(/.*\/node_modules\/\.pnpm\/[^/]+\/node_modules\//, '')
    .replace(`${process.cwd()}/`, '')

const sources = new Map<string, string[] | undefined>()
function sourceLines(path: string): string[] | undefined {
  if (!sources.has(path)) {
    try {
      sources.set(path, readFileSync(path, 'utf8').split('\n'))
    } catch {
      sources.set(path, undefined)
    }
  }
  return sources.get(path)
}

function where(frame: CallFrame): string {
  if (!frame.url) return ''
  let line = frame.lineNumber + 1
  if (frame.url.startsWith('file://')) {
    const path = fileURLToPath(frame.url)
    const map = maps.get(path)
    const entry = map?.findEntry(frame.lineNumber, frame.columnNumber) as { originalLine?: number } | undefined
    if (entry && typeof entry.originalLine === 'number') line = entry.originalLine + 1
    // A cached map can be from an older version of the file: trust a named function's declaration.
    const name = frame.functionName
    const lines = map ? sourceLines(path) : undefined
    if (name && lines && !lines[line - 1]?.includes(name)) {
      const declared = lines.findIndex((text) => new RegExp(`(function\\s+|\\b)${name}\\s*[(:=<]`).test(text))
      if (declared >= 0) line = declared + 1
    }
  }
  return `${shortUrl(frame.url)}:${line}`
}

const parent = new Map<number, number>()
for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id)
const selfTime = new Map<number, number>()
profile.samples.forEach((id, i) => {
  selfTime.set(id, (selfTime.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0))
})
const total = profile.timeDeltas.reduce((a, b) => a + b, 0)

const label = new Map<number, string>()
for (const node of profile.nodes) label.set(node.id, `${node.callFrame.functionName || '(anonymous)'}  ${where(node.callFrame)}`)

const self = new Map<string, number>()
const inclusive = new Map<string, number>()
for (const node of profile.nodes) {
  const t = selfTime.get(node.id) ?? 0
  if (t === 0) continue
  const key = label.get(node.id)!
  self.set(key, (self.get(key) ?? 0) + t)
  const seen = new Set<string>()
  for (let cur: number | undefined = node.id; cur !== undefined; cur = parent.get(cur)) {
    const k = label.get(cur)!
    if (seen.has(k)) continue
    seen.add(k)
    inclusive.set(k, (inclusive.get(k) ?? 0) + t)
  }
}

function print(title: string, table: Map<string, number>): void {
  console.log(`\n${title}`)
  const rows = [...table]
    .filter(([key]) => !values.filter || key.includes(values.filter))
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
  for (const [key, t] of rows)
    console.log(`${((100 * t) / total).toFixed(1).padStart(5)}%  ${(t / 1000).toFixed(0).padStart(6)} ms  ${key}`)
}

console.log(`${file}: ${(total / 1000).toFixed(0)} ms sampled`)
print('self time', self)
print('inclusive time', inclusive)

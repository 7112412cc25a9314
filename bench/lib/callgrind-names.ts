/**
 * A callgrind file's costs by function, the JIT's frames (addresses to callgrind) named from the
 * map V8 writes with `--perf-basic-prof` (`<start> <size> <name>` in hex, one line per compiled
 * function). Self cost is what a function's own code ran; a call's cost is inclusive.
 */

interface Range {
  start: number
  size: number
  name: string
}

/** The map's code ranges; `name` names an address by the latest range that holds it (code moves and is replaced). */
export function codeMap(text: string): (name: string) => string {
  const ranges: Range[] = text
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [start, size, ...name] = line.split(' ')
      return { start: Number.parseInt(start as string, 16), size: Number.parseInt(size as string, 16), name: name.join(' ') }
    })
    .sort((a, b) => a.start - b.start)
  return (name) => {
    const hex = /^0x([0-9a-f]+)/.exec(name)
    if (!hex) return name
    const address = Number.parseInt(hex[1] as string, 16)
    let lo = 0
    let hi = ranges.length - 1
    while (lo <= hi) {
      const mid = (lo + hi) >> 1
      if ((ranges[mid] as Range).start <= address) lo = mid + 1
      else hi = mid - 1
    }
    for (let i = hi; i >= 0 && i > hi - 64; i--) {
      const range = ranges[i] as Range
      if (range.start <= address && address < range.start + range.size) return range.name.replace(/^JS:[*^~+]?/, '')
    }
    return name
  }
}

export interface CallgrindCosts {
  /** Instructions each function's own code ran. */
  self: Map<string, number>
  /** Inclusive instructions of the calls into functions whose name starts with `prefix`, by caller. */
  callersOf(prefix: string): Map<string, number>
  /**
   * Every instruction charged to the JavaScript that caused it, by origin: the self cost of V8's
   * builtins, runtime and GC goes up the call graph to the JavaScript functions that called it (in
   * proportion to what each call cost), the optimizing compilers stay apart.
   */
  byCause(): Map<string, number>
  /** The own cost of the functions whose name starts with `prefix`, charged to the JavaScript functions that caused it. */
  causesOf(prefix: string): Map<string, number>
}

// The format: `fn=(id) name` opens a function's costs (the name given once, then the id alone),
// `cfn=` and `calls=` a call from it whose next cost line is that call's inclusive cost; every
// other cost line (`<position> <cost>`) is the function's own.
export function readCallgrind(text: string, name: (name: string) => string = (n) => n): CallgrindCosts {
  const names = new Map<string, string>()
  const self = new Map<string, number>()
  const calls: { caller: string; callee: string; cost: number }[] = []
  const add = (map: Map<string, number>, key: string, n: number) => map.set(key, (map.get(key) ?? 0) + n)
  const idName = (line: string, prefix: string) => {
    const m = new RegExp(`^${prefix}=\\((\\d+)\\)(?: (.*))?`).exec(line)
    if (!m) return name(line.slice(prefix.length + 1))
    if (m[2] !== undefined) names.set(m[1] as string, name(m[2]))
    return names.get(m[1] as string) ?? (m[1] as string)
  }
  let fn = ''
  let callee = ''
  let inCall = false
  for (const line of text.split('\n')) {
    const first = line.charCodeAt(0)
    if ((first >= 48 && first <= 57) || line[0] === '+' || line[0] === '-' || line[0] === '*') {
      const cost = Number(line.split(' ')[1] ?? 0)
      if (inCall) calls.push({ caller: fn, callee, cost })
      else add(self, fn, cost)
      inCall = false
    } else if (line.startsWith('fn=')) fn = idName(line, 'fn')
    else if (line.startsWith('cfn=')) callee = idName(line, 'cfn')
    else if (line.startsWith('calls=')) inCall = true
  }
  const into = new Map<string, { caller: string; cost: number }[]>()
  for (const call of calls) {
    if (call.caller === call.callee) continue
    const edges = into.get(call.callee) ?? []
    edges.push(call)
    into.set(call.callee, edges)
  }
  // A function's share of the JavaScript (or compilers) that caused it, found up its callers in
  // proportion to each call's cost (memoized; a root or a cycle: UNATTRIBUTED).
  const shares = new Map<string, Map<string, number>>()
  const sharesOf = (fn: string, seen: Set<string>): Map<string, number> => {
    if (CAUSES.has(originOf(fn))) return new Map([[fn, 1]])
    const known = shares.get(fn)
    if (known) return known
    const edges = into.get(fn) ?? []
    const total = edges.reduce((n, e) => n + e.cost, 0)
    if (total === 0 || seen.has(fn)) return new Map([[UNATTRIBUTED, 1]])
    const out = new Map<string, number>()
    seen.add(fn)
    for (const edge of edges)
      for (const [cause, share] of sharesOf(edge.caller, seen))
        out.set(cause, (out.get(cause) ?? 0) + (share * edge.cost) / total)
    seen.delete(fn)
    shares.set(fn, out)
    return out
  }
  /** The self cost of the functions `which` picks, charged to the functions that caused it. */
  const charged = (which: (fn: string) => boolean) => {
    const by = new Map<string, number>()
    for (const [fn, cost] of self) {
      if (!which(fn)) continue
      for (const [cause, share] of sharesOf(fn, new Set())) add(by, cause, cost * share)
    }
    return by
  }
  return {
    self,
    byCause() {
      const by = new Map<string, number>()
      for (const [fn, cost] of charged(() => true)) add(by, fn === UNATTRIBUTED ? fn : originOf(fn), cost)
      return by
    },
    causesOf(prefix) {
      return charged((fn) => fn.startsWith(prefix))
    },
    callersOf(prefix) {
      const by = new Map<string, number>()
      for (const call of calls) if (call.callee.startsWith(prefix)) add(by, call.caller, call.cost)
      return by
    },
  }
}

/** What no JavaScript called: mostly the full GC that closes a counted window (its garbage, all callers'). */
export const UNATTRIBUTED = 'no JavaScript caller (the full GC that ends the window)'

/** The origins a cost is charged to (the JavaScript, and the compilers kept apart). */
const CAUSES = new Set(['xstate', 'signalbox', 'other JavaScript', "V8's optimizing compilers"])

/** Where a function comes from, for the summary by origin. */
export function originOf(name: string): string {
  if (/xstate/.test(name)) return 'xstate'
  if (/packages\/(core|actors)\//.test(name)) return 'signalbox'
  if (/^(node:|file:|\/)/.test(name.split(' ').at(-1) ?? '')) return 'other JavaScript'
  if (/compiler|maglev|turboshaft/i.test(name)) return "V8's optimizing compilers"
  if (/Scaveng|Mark|Sweep|heap::|Heap::|Evacuat/.test(name)) return "V8's garbage collector"
  return "V8's builtins and runtime, libuv, libc"
}

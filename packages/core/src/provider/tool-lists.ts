import type { ToolSpec } from './provider.ts'

/**
 * The tools in a provider's own format, built once per tool list: an agent sends the same list on
 * every call (a hook that changes it sends a new one), so a request costs no rebuilding per call.
 */
export function perToolList<W>(build: (spec: ToolSpec) => W): (tools: readonly ToolSpec[]) => W[] {
  const built = new WeakMap<readonly ToolSpec[], { specs: ToolSpec[]; wire: W[] }>()
  return (tools) => {
    const cached = built.get(tools)
    // Checked spec by spec: a hook may change a list it handed back before.
    if (cached && cached.specs.length === tools.length && cached.specs.every((spec, i) => spec === tools[i])) return cached.wire
    const wire = tools.map(build)
    built.set(tools, { specs: [...tools], wire })
    return wire
  }
}

import { createHash } from 'node:crypto'

/** JSON with object keys sorted, so the same call always has the same digest. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (v && typeof v === 'object' && !Array.isArray(v)) {
      const sorted: Record<string, unknown> = {}
      for (const k of Object.keys(v as object).sort()) sorted[k] = (v as Record<string, unknown>)[k]
      return sorted
    }
    return v
  })
}

/**
 * The digest a decision must quote: sha256 over the canonical JSON of the tool name and
 * arguments. It binds a decision to exactly what the reviewer was shown.
 */
export function callDigest(toolName: string, args: unknown): string {
  return `sha256:${createHash('sha256')
    .update(canonicalJson({ arguments: args ?? null, toolName }))
    .digest('hex')}`
}

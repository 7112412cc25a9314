/**
 * Checks edited arguments against the tool's JSON Schema in the page, before anything is sent.
 * The agent checks them again (its own zod schema): this check only spares a person a refused run.
 *
 * Why zod 4's `fromJSONSchema`: the tool's schema is what zod's `toJSONSchema` emitted (draft-07),
 * so zod reads it back faithfully; it is already a dependency; and it is bundled into the page at
 * build time like the rest (no CDN). Its one use of `new Function` (a faster object parser) is switched off with
 * `jitless` in `main.ts`, so the page runs under the server's `script-src 'self'` policy.
 * A schema zod cannot read (a hand-written one with `if`/`then`, say) leaves the check to the agent.
 */
// A namespace read by static property: esbuild keeps only what is used (`{ z }` would bundle all of
// zod, its locales too, ~3× the bytes), and an export the installed zod lacks is `undefined`, not a
// build error: zod 3.25's `zod/v4`, which the peer range allows, has no `fromJSONSchema`.
import * as zod from 'zod/v4'
import type { JSONSchema } from 'zod/v4/core'

const fromJSONSchema: typeof zod.fromJSONSchema | undefined = zod.fromJSONSchema

export type ArgumentCheck = { ok: true; value: unknown } | { ok: false; issues: string[] }

/** Reads the editor's text and checks it. */
export type ArgumentChecker = (text: string) => ArgumentCheck

/** `undefined` when there is no schema zod can read: then only the agent checks the edit. */
export function argumentChecker(parameters: Record<string, unknown> | undefined): ArgumentChecker | undefined {
  if (!parameters || !fromJSONSchema) return undefined
  let schema: zod.ZodType
  try {
    // Tool schemas travel without `$schema`; signalbox generates draft-07 (`definitions`, not `$defs`).
    schema = fromJSONSchema(parameters as JSONSchema.JSONSchema, { defaultTarget: 'draft-7' })
  } catch {
    return undefined
  }
  return (text) => {
    const read = parseOnly(text)
    if (!read.ok) return read
    const { value } = read
    const parsed = schema.safeParse(value)
    if (parsed.success) return { ok: true, value }
    return {
      ok: false,
      issues: parsed.error.issues.map((issue) => {
        const path = issue.path.length > 0 ? issue.path.map(String).join('.') : '(root)'
        return `${path}: ${issue.message}`
      }),
    }
  }
}

/** JSON syntax only: what the page can check when no schema came with the request. */
export function parseOnly(text: string): ArgumentCheck {
  try {
    return { ok: true, value: JSON.parse(text) }
  } catch (failure) {
    return { ok: false, issues: [`not JSON: ${failure instanceof Error ? failure.message : String(failure)}`] }
  }
}

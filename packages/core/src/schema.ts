/**
 * The one home of a schema a user hands to signalbox (a tool's arguments, a structured answer):
 * zod 4 (`zod`), zod 3.25+'s `zod/v4`, zod 4 mini, or a zod 3 schema. zod 4 schemas are read
 * through `zod/v4/core`, the subpath every zod since 3.25 ships, so the types and functions are
 * the user's own zod whichever they have; zod 3 schemas are converted by `zod3-json-schema.ts`.
 */
import * as z4 from 'zod/v4/core'
import { ConfigError } from './errors.ts'
import { type Zod3Schema, zod3ToJsonSchema } from './zod3-json-schema.ts'

export type { Zod3Schema } from './zod3-json-schema.ts'

/** A zod schema of either major version: what `tool({ schema })` and `createAgent({ output })` take. */
export type Schema = z4.$ZodType | Zod3Schema

/** The value a schema parses to (zod's `z.output`, for both versions). */
export type SchemaOutput<S> = S extends z4.$ZodType ? z4.output<S> : S extends { _output: infer O } ? O : never

export type ValidationResult<T> = { ok: true; value: T } | { ok: false; issues: string[] }

/** What a failed zod parse reports, in either version. */
export interface SchemaIssues {
  issues: readonly { path: readonly PropertyKey[]; message: string }[]
}

/** One line per problem, with the path, so the model (or a person) can fix it. */
export function formatIssues(error: SchemaIssues): string[] {
  return error.issues.map((issue) => {
    const path = issue.path.length > 0 ? issue.path.map(String).join('.') : '(root)'
    return `${path}: ${issue.message}`
  })
}

const isZod4 = (schema: unknown): schema is z4.$ZodType => typeof schema === 'object' && schema !== null && '_zod' in schema

const isZod3 = (schema: unknown): schema is Zod3Schema =>
  typeof schema === 'object' &&
  schema !== null &&
  '_def' in schema &&
  typeof (schema as { safeParse?: unknown }).safeParse === 'function'

/** Throws a `ConfigError` naming `what` unless `schema` is a zod schema of either version. */
export function assertSchema(schema: unknown, what: string, example: string): asserts schema is Schema {
  if (isZod4(schema) || isZod3(schema)) return
  throw new ConfigError(`${what} must be a zod schema, e.g. ${example}; got ${describe(schema)}.`)
}

/**
 * The JSON Schema (draft-07, without `$schema`) of a zod schema: its `input` side for what a model
 * sends (a tool's arguments), its `output` side for what the answer must be.
 */
export function toJsonSchema(schema: Schema, io: 'input' | 'output', what: string): Record<string, unknown> {
  let json: Record<string, unknown>
  try {
    // `draft-7`: the name both zod 3.25's `zod/v4` and zod 4 accept (4.1+ also spells it `draft-07`).
    json = isZod4(schema)
      ? (z4.toJSONSchema(schema, { target: 'draft-7', io, unrepresentable: 'throw' }) as Record<string, unknown>)
      : zod3ToJsonSchema(schema, io)
  } catch (cause) {
    throw new ConfigError(
      `${what} cannot be expressed as JSON Schema (${cause instanceof Error ? cause.message : String(cause)}).`,
    )
  }
  const { $schema: _dialect, ...rest } = json
  return rest
}

/** Checks `value` against the schema. */
export function validate<S extends Schema>(schema: S, value: unknown): ValidationResult<SchemaOutput<S>> {
  const parsed = isZod4(schema) ? z4.safeParse(schema, value) : (schema as Zod3Schema).safeParse(value)
  if (parsed.success) return { ok: true, value: parsed.data as SchemaOutput<S> }
  return { ok: false, issues: formatIssues(parsed.error as SchemaIssues) }
}

function describe(value: unknown): string {
  if (value === null) return 'null'
  if (typeof value !== 'object') return typeof value
  const name = (value as object).constructor?.name
  return name && name !== 'Object' ? `an instance of ${name}` : 'a plain object'
}

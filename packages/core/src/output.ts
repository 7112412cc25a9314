import { ErrorCode, SignalboxError } from './errors.ts'
import { assertSchema, type Schema, type SchemaOutput, toJsonSchema, validate } from './schema.ts'

/** How the final answer must look, as sent to the endpoint (`response_format`). */
export interface ResponseFormat {
  type: 'json_schema'
  name: string
  schema: Record<string, unknown>
  /** True when the schema fits the endpoint's strict mode (every object closed, every key required). */
  strict: boolean
}

export type OutputCheck<T> = { ok: true; value: T } | { ok: false; issues: string[] }

/** A structured final answer: what is sent with each model call, and how the answer is checked. */
export interface OutputSpec<T> {
  readonly responseFormat: ResponseFormat
  /** Parses the model's final text as JSON and checks it against the schema. */
  check(text: string): OutputCheck<T>
}

/** The final answer failed the output schema twice (the model got one retry with the errors). */
export class OutputValidationError extends SignalboxError {
  readonly issues: string[]
  constructor(issues: string[], answer: string) {
    super(
      ErrorCode.OUTPUT_INVALID,
      `The model's final answer does not match the output schema, even after one retry: ${issues.join('; ')}.`,
      { fault: 'model', details: { issues, answer: answer.slice(0, 2_000) } },
    )
    this.issues = issues
  }
}

/** Builds the output spec of `createAgent({ output })` from a zod schema (zod 4, `zod/v4` of zod 3.25, or zod 3). */
export function outputSpec<S extends Schema>(schema: S, name = 'output'): OutputSpec<SchemaOutput<S>> {
  assertSchema(schema, 'createAgent({ output })', 'z.object({ answer: z.string() })')
  const json = toJsonSchema(schema, 'output', 'The output schema')
  return {
    responseFormat: { type: 'json_schema', name, schema: json, strict: fitsStrictMode(json) },
    check(text) {
      let parsed: unknown
      try {
        parsed = JSON.parse(stripCodeFence(text))
      } catch (error) {
        return { ok: false, issues: [`the answer is not valid JSON (${(error as Error).message})`] }
      }
      return validate(schema, parsed)
    },
  }
}

/** What the model reads after an answer that failed the schema: the problems, and what to do. */
export function outputRetryText(issues: string[]): string {
  return `Your answer does not match the required JSON schema: ${issues.join('; ')}. Answer again with only the JSON value, fixed.`
}

/** Some models wrap JSON in a markdown fence even when asked not to. */
function stripCodeFence(text: string): string {
  const match = /^\s*```(?:json)?\s*\n([\s\S]*?)\n?```\s*$/.exec(text)
  return match ? (match[1] as string) : text
}

const STRICT_KEYWORDS = new Set([
  'type',
  'properties',
  'required',
  'additionalProperties',
  'items',
  'enum',
  'const',
  'anyOf',
  'description',
  'title',
  'default',
  '$ref',
  'definitions',
  '$defs',
  'pattern',
  'format',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
  'minItems',
  'maxItems',
])

/**
 * Strict mode (OpenAI's structured outputs) accepts an object at the root, every object closed
 * (`additionalProperties: false`) with all its keys required, and a subset of keywords. A schema
 * outside that is still sent, not strict, and the answer is checked here either way.
 */
export function fitsStrictMode(schema: Record<string, unknown>): boolean {
  if (schema.type !== 'object') return false
  const fits = (node: unknown): boolean => {
    if (Array.isArray(node)) return node.every(fits)
    if (!node || typeof node !== 'object') return true
    const record = node as Record<string, unknown>
    for (const key of Object.keys(record)) if (!STRICT_KEYWORDS.has(key)) return false
    if (record.type === 'object' || record.properties) {
      if (record.additionalProperties !== false) return false
      const keys = Object.keys((record.properties as Record<string, unknown> | undefined) ?? {})
      const required = new Set((record.required as string[] | undefined) ?? [])
      if (!keys.every((k) => required.has(k))) return false
      if (!Object.values((record.properties as Record<string, unknown> | undefined) ?? {}).every(fits)) return false
    }
    for (const key of ['items', 'anyOf', 'definitions', '$defs'] as const) {
      const child = record[key]
      if (child === undefined) continue
      if (key === 'definitions' || key === '$defs') {
        if (!Object.values(child as Record<string, unknown>).every(fits)) return false
      } else if (!fits(child)) return false
    }
    return true
  }
  return fits(schema)
}

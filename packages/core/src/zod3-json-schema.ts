/**
 * JSON Schema (draft-07) of a zod 3 schema, read from its `_def`: zod 3 has no converter of its
 * own. It covers what tool arguments and structured answers are made of; what JSON Schema cannot
 * say (dates, maps, functions, recursion) throws, as zod 4's `toJSONSchema` does, so the mistake
 * shows when the tool is defined. Validation stays zod's own (`safeParse`): the JSON Schema only
 * tells the model what to send.
 */

/** A zod 3 schema, by the members signalbox uses (so the types need no `zod/v3` import). */
export interface Zod3Schema<Output = unknown> {
  readonly _def: unknown
  readonly _output: Output
  safeParse(data: unknown): { success: true; data: Output } | { success: false; error: unknown }
}

type Json = Record<string, unknown>
type Io = 'input' | 'output'

interface Def {
  typeName?: string
  description?: string
  [key: string]: unknown
}

interface Check {
  kind: string
  value?: unknown
  inclusive?: boolean
  regex?: RegExp
  version?: string
}

const STRING_FORMATS: Record<string, string> = {
  email: 'email',
  url: 'uri',
  uuid: 'uuid',
  datetime: 'date-time',
  date: 'date',
  time: 'time',
  duration: 'duration',
}

const escapeRegex = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

export function zod3ToJsonSchema(schema: Zod3Schema, io: Io): Json {
  return { $schema: 'http://json-schema.org/draft-07/schema#', ...convert(schema, io, []) }
}

function defOf(schema: unknown): Def {
  return ((schema as { _def?: Def })._def ?? {}) as Def
}

function convert(schema: unknown, io: Io, path: unknown[]): Json {
  if (path.includes(schema)) throw new Error('recursive zod 3 schemas cannot be converted; define this one with zod 4 (zod/v4)')
  const def = defOf(schema)
  const json = convertDef(def, io, [...path, schema])
  return def.description === undefined ? json : { ...json, description: def.description }
}

function convertDef(def: Def, io: Io, path: unknown[]): Json {
  const inner = (key: string) => convert(def[key], io, path)
  switch (def.typeName) {
    case 'ZodString':
      return stringSchema((def.checks as Check[]) ?? [])
    case 'ZodNumber':
      return numberSchema((def.checks as Check[]) ?? [])
    case 'ZodBoolean':
      return { type: 'boolean' }
    case 'ZodNull':
      return { type: 'null' }
    case 'ZodAny':
    case 'ZodUnknown':
      return {}
    case 'ZodNever':
      return { not: {} }
    case 'ZodLiteral':
      return literalSchema(def.value)
    case 'ZodEnum':
      return { type: 'string', enum: [...(def.values as string[])] }
    case 'ZodNativeEnum':
      return nativeEnumSchema(def.values as Record<string, string | number>)
    case 'ZodObject':
      return objectSchema(def, io, path)
    case 'ZodArray':
      return arraySchema(def, io, path)
    case 'ZodTuple': {
      const items = (def.items as unknown[]).map((item) => convert(item, io, path))
      const json: Json = { type: 'array', items, minItems: items.length }
      if (def.rest) json.additionalItems = inner('rest')
      else json.maxItems = items.length
      return json
    }
    case 'ZodRecord':
      return { type: 'object', additionalProperties: inner('valueType') }
    case 'ZodUnion':
    case 'ZodDiscriminatedUnion':
      return { anyOf: (def.options as unknown[]).map((option) => convert(option, io, path)) }
    case 'ZodIntersection':
      return { allOf: [inner('left'), inner('right')] }
    case 'ZodOptional':
    case 'ZodCatch':
    case 'ZodReadonly':
      return inner('innerType')
    case 'ZodNullable':
      return { anyOf: [inner('innerType'), { type: 'null' }] }
    case 'ZodDefault':
      return { ...inner('innerType'), default: (def.defaultValue as () => unknown)() }
    case 'ZodBranded':
      return inner('type')
    case 'ZodLazy':
      return convert((def.getter as () => unknown)(), io, path)
    case 'ZodPipeline':
      return inner(io === 'input' ? 'in' : 'out')
    case 'ZodEffects': {
      const effect = (def.effect as { type?: string } | undefined)?.type
      if (effect === 'transform' && io === 'output') throw new Error('a transform has no JSON Schema for its output')
      if (effect === 'preprocess' && io === 'input') return {}
      return inner('schema')
    }
    default:
      throw new Error(`${def.typeName ?? 'this schema'} cannot be represented in JSON Schema`)
  }
}

function stringSchema(checks: Check[]): Json {
  const json: Json = { type: 'string' }
  const patterns: string[] = []
  for (const check of checks) {
    const format = STRING_FORMATS[check.kind]
    if (format) json.format = format
    else if (check.kind === 'ip' && check.version) json.format = check.version
    else if (check.kind === 'min') json.minLength = check.value
    else if (check.kind === 'max') json.maxLength = check.value
    else if (check.kind === 'length') json.minLength = json.maxLength = check.value
    else if (check.kind === 'regex' && check.regex) patterns.push(check.regex.source)
    else if (check.kind === 'startsWith') patterns.push(`^${escapeRegex(String(check.value))}`)
    else if (check.kind === 'endsWith') patterns.push(`${escapeRegex(String(check.value))}$`)
    else if (check.kind === 'includes') patterns.push(escapeRegex(String(check.value)))
  }
  if (patterns.length === 1) json.pattern = patterns[0]
  else if (patterns.length > 1) json.allOf = patterns.map((pattern) => ({ pattern }))
  return json
}

function numberSchema(checks: Check[]): Json {
  const json: Json = { type: 'number' }
  for (const check of checks) {
    if (check.kind === 'int') json.type = 'integer'
    else if (check.kind === 'min') json[check.inclusive ? 'minimum' : 'exclusiveMinimum'] = check.value
    else if (check.kind === 'max') json[check.inclusive ? 'maximum' : 'exclusiveMaximum'] = check.value
    else if (check.kind === 'multipleOf') json.multipleOf = check.value
  }
  return json
}

function literalSchema(value: unknown): Json {
  if (value === null) return { type: 'null', const: null }
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
    return { type: typeof value, const: value }
  }
  throw new Error(`the literal ${String(value)} cannot be represented in JSON Schema`)
}

function nativeEnumSchema(values: Record<string, string | number>): Json {
  // A numeric TypeScript enum maps names to numbers and numbers back to names: keep the values.
  const kept = Object.keys(values)
    .filter((key) => typeof values[values[key] as string | number] !== 'number')
    .map((key) => values[key] as string | number)
  const types = [...new Set(kept.map((value) => typeof value))]
  return { type: types.length === 1 ? types[0] : types, enum: kept }
}

function objectSchema(def: Def, io: Io, path: unknown[]): Json {
  const shape = (def.shape as () => Record<string, unknown>)()
  const properties: Json = {}
  const required: string[] = []
  for (const [key, value] of Object.entries(shape)) {
    properties[key] = convert(value, io, path)
    if (!mayBeMissing(value, io)) required.push(key)
  }
  const json: Json = { type: 'object', properties, required }
  const catchall = defOf(def.catchall)
  if (catchall.typeName && catchall.typeName !== 'ZodNever') json.additionalProperties = convert(def.catchall, io, path)
  // As zod 4 does: unknown keys are refused (strict) or dropped (strip) from what comes out.
  else if (def.unknownKeys === 'strict' || (def.unknownKeys === 'strip' && io === 'output')) json.additionalProperties = false
  return json
}

/** A key that may be absent: optional on the input side (defaults fill it); only truly optional on the output side. */
function mayBeMissing(schema: unknown, io: Io): boolean {
  const accepts = (schema as { isOptional?: () => boolean }).isOptional?.() ?? false
  if (io === 'input' || !accepts) return accepts
  const typeName = defOf(schema).typeName
  return typeName !== 'ZodDefault' && typeName !== 'ZodCatch'
}

function arraySchema(def: Def, io: Io, path: unknown[]): Json {
  const json: Json = { type: 'array', items: convert(def.type, io, path) }
  const limit = (key: string) => (def[key] as { value: number } | null | undefined)?.value
  const exact = limit('exactLength')
  if (exact !== undefined) json.minItems = json.maxItems = exact
  if (limit('minLength') !== undefined) json.minItems = limit('minLength')
  if (limit('maxLength') !== undefined) json.maxItems = limit('maxLength')
  return json
}

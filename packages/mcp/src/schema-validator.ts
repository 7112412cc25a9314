import { ConfigError, type ValidationResult } from '@signalbox/core'
import { Ajv, type ErrorObject, type Options, type ValidateFunction } from 'ajv'
import { Ajv2019 } from 'ajv/dist/2019.js'
import { Ajv2020 } from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'

/**
 * ajv, the validator the MCP SDK itself uses: full JSON Schema (draft-07, 2019-09, 2020-12, `$ref`,
 * formats), compiled once per tool. Not strict: servers add keywords ajv does not know.
 * No defaults, no coercion: the server gets exactly what the model sent.
 */
const OPTIONS: Options = { strict: false, allErrors: true, validateSchema: false, logger: false }

type Dialect = 'draft-07' | '2019-09' | '2020-12'
const engines = new Map<Dialect, Ajv>()

function engine(dialect: Dialect): Ajv {
  let ajv = engines.get(dialect)
  if (!ajv) {
    ajv = dialect === '2020-12' ? new Ajv2020(OPTIONS) : dialect === '2019-09' ? new Ajv2019(OPTIONS) : new Ajv(OPTIONS)
    ;(addFormats as unknown as (ajv: Ajv) => void)(ajv)
    engines.set(dialect, ajv)
  }
  return ajv
}

/** MCP's default dialect is 2020-12; older schemas name theirs in `$schema`. */
function dialectOf(schema: Record<string, unknown>): Dialect {
  const declared = typeof schema.$schema === 'string' ? schema.$schema : ''
  if (declared.includes('2019-09')) return '2019-09'
  if (/draft-0[4-7]/.test(declared)) return 'draft-07'
  return '2020-12'
}

/** Compiles `schema` into a validator for tool arguments; a schema ajv cannot compile is a `ConfigError`. */
export function compileArgumentsValidator(
  schema: Record<string, unknown>,
  toolName: string,
): (args: unknown) => ValidationResult<Record<string, unknown>> {
  let validate: ValidateFunction
  try {
    // Without `$schema` and `$id`: the same schema may be compiled twice (two toolsets) and
    // ajv refuses a second schema with the same id.
    const { $schema: _dialect, $id: _id, ...body } = schema
    validate = engine(dialectOf(schema)).compile(body)
  } catch (cause) {
    throw new ConfigError(`MCP tool "${toolName}": its input schema cannot be compiled (${String(cause)}).`, { toolName })
  }
  return (args) => {
    if (validate(args)) return { ok: true, value: args as Record<string, unknown> }
    return { ok: false, issues: (validate.errors ?? []).map(formatIssue) }
  }
}

/** `path: message`, like the zod tools, so the model reads the same shape of problem either way. */
function formatIssue(error: ErrorObject): string {
  const segments = error.instancePath.split('/').slice(1).map(unescapePointer)
  if (error.keyword === 'required') segments.push(String((error.params as { missingProperty: string }).missingProperty))
  if (error.keyword === 'additionalProperties') {
    segments.push(String((error.params as { additionalProperty: string }).additionalProperty))
  }
  const path = segments.length > 0 ? segments.join('.') : '(root)'
  const allowed =
    error.keyword === 'enum' ? `: ${JSON.stringify((error.params as { allowedValues: unknown }).allowedValues)}` : ''
  return `${path}: ${error.message ?? error.keyword}${allowed}`
}

const unescapePointer = (segment: string) => segment.replaceAll('~1', '/').replaceAll('~0', '~')

/**
 * The command framework: one `Command` per file in `commands/`, parsed with `node:util`
 * `parseArgs` (strict), global flags shared by all, help generated from the same definitions.
 */
import { parseArgs } from 'node:util'
import { ErrorCode, SignalboxError } from '@signalbox/core'
import { CONNECTION_OPTIONS } from './connection-flags.ts'
import { type Colors, createColorizer } from './output.ts'

/** `DEFAULT_SUBJECT_PREFIX` of @signalbox/core/bus (a test keeps them equal), without loading the bus. */
export const DEFAULT_PREFIX = 'signalbox.v1'

/** The CLI's own errors: the person at the command line has to act. */
export class CodedError extends SignalboxError {
  constructor(code: ErrorCode, message: string, options: { cause?: unknown; details?: Record<string, unknown> } = {}) {
    super(code, message, { ...options, fault: 'user' })
  }
}

export interface OptionSpec {
  type: 'string' | 'boolean'
  short?: string
  /** Shown in help after the flag, e.g. `<url>`. */
  valueName?: string
  description: string
  /** Shown in help as `(default: ...)`. */
  default?: string
  /** Allowed values (checked before the command runs; of each item, for a list). */
  choices?: readonly string[]
  /** A list: the flag may be repeated and each value may list several, comma-separated; the command reads them joined by commas. */
  multiple?: boolean
}

export interface CommandIO {
  stdout: NodeJS.WritableStream & { isTTY?: boolean; columns?: number }
  stderr: NodeJS.WritableStream & { isTTY?: boolean }
  stdin: NodeJS.ReadableStream & { isTTY?: boolean }
  env: NodeJS.ProcessEnv
  cwd: string
  /** Stops long-running commands like Ctrl-C does (for embedding the CLI, and tests). */
  signal?: AbortSignal
}

export interface GlobalValues {
  nats: string | undefined
  prefix: string
  json: boolean
}

export interface CommandContext {
  /** Command flags (and the global ones), as parsed. */
  values: Record<string, string | boolean | undefined>
  positionals: string[]
  global: GlobalValues
  io: CommandIO
  c: Colors
  /** Writes a line to stdout. */
  out(line?: string): void
  /** Writes a line to stderr. */
  err(line?: string): void
  /** The command's own definition (for usage errors). */
  command: Command
}

export interface Command {
  /** `review`, or `tools serve` for a sub-command. */
  name: string
  summary: string
  /** After `signalbox `: `steer <agent> <text...> [flags]`. */
  usage: string
  /** A few sentences: what the command does. */
  description: string
  options: Record<string, OptionSpec>
  /** Whether `--nats` / `--prefix` matter (shown in help). */
  bus: 'required' | 'optional' | 'none'
  /** Positional arguments, for help: `[name, description]`. */
  args?: [string, string][]
  examples: [string, string][]
  /** Bounds on positionals, checked before `run`. */
  minArgs?: number
  maxArgs?: number
  run(context: CommandContext): Promise<number>
}

/** Exit codes. */
export const EXIT = { ok: 0, failed: 1, usage: 2, cancelled: 130 } as const

/** A command line the CLI cannot make sense of: printed with the usage, exit 2. */
export class UsageError extends CodedError {
  readonly command: Command | undefined
  constructor(message: string, command?: Command) {
    super(ErrorCode.USAGE, message)
    this.command = command
  }
}

/** A failure the CLI reports as `error [CODE]: message`, exit 1. */
export class CliError extends CodedError {}

export const GLOBAL_OPTIONS: Record<string, OptionSpec> = {
  nats: {
    type: 'string',
    valueName: '<url>',
    description: 'NATS server to use as the bus',
    default: '$SIGNALBOX_NATS_URL',
  },
  prefix: {
    type: 'string',
    valueName: '<prefix>',
    description: 'subject prefix of the deployment',
    default: DEFAULT_PREFIX,
  },
  ...CONNECTION_OPTIONS,
  json: { type: 'boolean', description: 'machine-readable output (JSON, one object per line)' },
  help: { type: 'boolean', short: 'h', description: 'show help for the command' },
}

export const NO_BUS_MESSAGE = 'no bus: pass --nats nats://host:4222 or set SIGNALBOX_NATS_URL'

/** Parses `argv` (everything after the command name) for `command`. Throws `UsageError`. */
export function parseCommandArgs(
  command: Command,
  argv: string[],
  io: CommandIO,
): { values: CommandContext['values']; positionals: string[]; global: GlobalValues } {
  const specs = { ...GLOBAL_OPTIONS, ...command.options }
  const options: Record<string, { type: 'string' | 'boolean'; short?: string; multiple?: boolean }> = {}
  for (const [name, spec] of Object.entries(specs))
    options[name] = {
      type: spec.type,
      ...(spec.short ? { short: spec.short } : {}),
      ...(spec.multiple ? { multiple: true } : {}),
    }
  let parsed: { values: Record<string, string | boolean | string[] | undefined>; positionals: string[] }
  try {
    parsed = parseArgs({ args: argv, options, strict: true, allowPositionals: true }) as typeof parsed
  } catch (error) {
    throw new UsageError(describeParseError(error, command), command)
  }
  const { positionals } = parsed
  const values: CommandContext['values'] = {}
  for (const [name, value] of Object.entries(parsed.values)) values[name] = Array.isArray(value) ? value.join(',') : value
  if (values.help) return { values, positionals, global: globalValues(values, io) }
  for (const [name, spec] of Object.entries(specs)) {
    const value = values[name]
    const items = typeof value === 'string' ? (spec.multiple ? value.split(',').map((v) => v.trim()) : [value]) : []
    for (const item of items) {
      if (spec.choices && !spec.choices.includes(item)) {
        throw new UsageError(`--${name} must be one of ${spec.choices.join(', ')} (got "${item}")`, command)
      }
      if (spec.type === 'string' && item === '') throw new UsageError(`--${name} needs a value`, command)
    }
  }
  if (command.minArgs !== undefined && positionals.length < command.minArgs) {
    const missing = (command.args ?? []).slice(positionals.length).map(([name]) => name)
    throw new UsageError(`missing ${missing.length > 0 ? missing.join(' ') : 'arguments'}`, command)
  }
  if (command.maxArgs !== undefined && positionals.length > command.maxArgs) {
    throw new UsageError(`unexpected argument "${positionals[command.maxArgs]}"`, command)
  }
  return { values, positionals, global: globalValues(values, io) }
}

function globalValues(values: Record<string, string | boolean | undefined>, io: CommandIO): GlobalValues {
  const flag = typeof values.nats === 'string' ? values.nats : typeof values.server === 'string' ? values.server : undefined
  const nats = flag ?? (io.env.SIGNALBOX_NATS_URL || io.env.NATS_URL || undefined)
  return {
    nats,
    prefix: typeof values.prefix === 'string' ? values.prefix : DEFAULT_PREFIX,
    json: values.json === true,
  }
}

function describeParseError(error: unknown, command: Command): string {
  const code = (error as { code?: string }).code
  const message = error instanceof Error ? error.message : String(error)
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
    const flag = /'([^']+)'/.exec(message)?.[1] ?? message
    return `unknown flag ${flag} for "signalbox ${command.name}"`
  }
  if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
    return message.replace(/\s+To specify an option argument starting with a dash[\s\S]*$/, '').replace(/^Option /, 'flag ')
  }
  return message
}

/** The help text of one command: what it does, usage, arguments, flags with defaults, examples. */
export function commandHelp(command: Command, c: Colors = createColorizer(false)): string {
  const lines: string[] = []
  lines.push(`${c.bold(`signalbox ${command.name}`)}: ${command.summary}`)
  lines.push('')
  lines.push(`${c.bold('Usage:')} signalbox ${command.usage}`)
  lines.push('')
  for (const paragraph of command.description.split('\n')) lines.push(paragraph ? `  ${paragraph}` : '')
  if (command.args && command.args.length > 0) {
    lines.push('')
    lines.push(c.bold('Arguments:'))
    const width = Math.max(...command.args.map(([name]) => name.length))
    for (const [name, description] of command.args) lines.push(`  ${name.padEnd(width)}  ${description}`)
  }
  const sections: [string, Record<string, OptionSpec>][] = [['Flags:', command.options]]
  const global: Record<string, OptionSpec> = {}
  for (const [name, spec] of Object.entries(GLOBAL_OPTIONS)) {
    if ((name === 'nats' || name === 'prefix' || name in CONNECTION_OPTIONS) && command.bus === 'none') continue
    global[name] = spec
  }
  sections.push(['Global flags:', global])
  const rendered = sections.map(
    ([title, specs]) => [title, Object.entries(specs).map(([name, spec]) => renderFlag(name, spec, command))] as const,
  )
  const width = Math.max(...rendered.flatMap(([, rows]) => rows.map(([flag]) => flag.length)))
  for (const [title, rows] of rendered) {
    if (rows.length === 0) continue
    lines.push('')
    lines.push(c.bold(title))
    for (const [flag, text] of rows) lines.push(`  ${flag.padEnd(width)}  ${text}`)
  }
  if (command.examples.length > 0) {
    lines.push('')
    lines.push(c.bold('Examples:'))
    for (const [example, note] of command.examples) {
      lines.push(`  ${c.dim('#')} ${c.dim(note)}`)
      lines.push(`  ${example}`)
    }
  }
  return lines.join('\n')
}

function renderFlag(name: string, spec: OptionSpec, command: Command): [string, string] {
  const flag = `${spec.short ? `-${spec.short}, ` : '    '}--${name}${spec.valueName ? ` ${spec.valueName}` : ''}`
  let text = spec.description
  if (spec.choices) text += ` (${spec.choices.join(' | ')})`
  if (spec.multiple) text += '; repeat it, or separate with commas'
  if (name === 'nats' && command.bus === 'required') text += ` (required; default: ${spec.default})`
  else if (name === 'nats' && command.bus === 'optional') text += ` (default: ${spec.default}; none: embedded)`
  else if (spec.default !== undefined) text += ` (default: ${spec.default})`
  return [flag, text]
}

/** The overview: every command with its summary. */
export function overviewHelp(commands: readonly Command[], c: Colors = createColorizer(false)): string {
  const width = Math.max(...commands.map((command) => command.name.length))
  return [
    `${c.bold('signalbox')}: run LLM agents as actors, and review, steer, watch and serve them over a bus (NATS).`,
    '',
    `${c.bold('Usage:')} signalbox <command> [arguments] [flags]`,
    '',
    c.bold('Commands:'),
    ...commands.map((command) => `  ${command.name.padEnd(width)}  ${command.summary}`),
    `  ${'help'.padEnd(width)}  show help for a command (signalbox help <command>)`,
    '',
    c.bold('Global flags:'),
    `  --nats <url>       NATS server to use as the bus (default: $SIGNALBOX_NATS_URL)`,
    `  --prefix <prefix>  subject prefix of the deployment (default: ${DEFAULT_PREFIX})`,
    '  --json             machine-readable output where it makes sense',
    '  -h, --help         help for any command',
    '',
    `Run ${c.bold('signalbox help <command>')} or ${c.bold('signalbox <command> --help')} for its flags and examples.`,
    `Colours are off when NO_COLOR is set or the output is not a terminal.`,
  ].join('\n')
}

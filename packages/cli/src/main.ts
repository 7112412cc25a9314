/**
 * `signalbox <command>`: the entry point. The installed bin (`dist/bin.js`) calls `runMain()`; in this repository `bin/signalbox.js` registers tsx first;
 * `tsx packages/cli/src/main.ts ...` (the root `pnpm signalbox` script) runs it directly.
 */
import { readFileSync } from 'node:fs'
import { pathToFileURL } from 'node:url'
import {
  type Command,
  type CommandContext,
  type CommandIO,
  commandHelp,
  EXIT,
  overviewHelp,
  parseCommandArgs,
  UsageError,
} from './cli.ts'
import { audit } from './commands/audit.ts'
import { cancel } from './commands/cancel.ts'
import { consoleCommand } from './commands/console.ts'
import { graph } from './commands/graph.ts'
import { host } from './commands/host.ts'
import { inspect } from './commands/inspect.ts'
import { natsPermissions } from './commands/nats-permissions.ts'
import { review } from './commands/review.ts'
import { run } from './commands/run.ts'
import { runs } from './commands/runs.ts'
import { runsPrune } from './commands/runs-prune.ts'
import { status } from './commands/status.ts'
import { steer } from './commands/steer.ts'
import { toolsServe } from './commands/tools-serve.ts'
import { watch } from './commands/watch.ts'
import { colorsEnabled, createColorizer } from './output.ts'

/** Every command, in the order `signalbox --help` lists them. */
export const COMMANDS: readonly Command[] = [
  run,
  review,
  consoleCommand,
  steer,
  watch,
  audit,
  status,
  runs,
  runsPrune,
  cancel,
  toolsServe,
  inspect,
  graph,
  host,
  natsPermissions,
]

export function defaultIO(): CommandIO {
  return { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin, env: process.env, cwd: process.cwd() }
}

/** Runs one command line; resolves with the exit code (never throws). */
export async function main(argv: string[], io: CommandIO = defaultIO()): Promise<number> {
  const c = createColorizer(colorsEnabled(io.env, io.stdout))
  const ce = createColorizer(colorsEnabled(io.env, io.stderr))
  const out = (line = '') => io.stdout.write(`${line}\n`)
  const err = (line = '') => io.stderr.write(`${line}\n`)
  let command: Command | undefined
  try {
    const [first, ...rest] = argv
    if (first === undefined || first === '--help' || first === '-h') {
      out(overviewHelp(COMMANDS, c))
      return EXIT.ok
    }
    if (first === '--version' || first === '-v') {
      out(version())
      return EXIT.ok
    }
    if (first === 'help') {
      // `help`, `help --help`: the overview (it says how to get one command's help).
      if (rest.length === 0 || isHelpFlag(rest[0])) {
        out(overviewHelp(COMMANDS, c))
        return EXIT.ok
      }
      const found = findCommand(rest) ?? findGroup(rest[0])
      if (!found) throw new UsageError(`no such command "${rest.join(' ')}"`)
      out(commandHelp(found.command, c))
      return EXIT.ok
    }
    // `tools --help` (a group without its sub-command): the help of the group's command.
    const group = isHelpFlag(rest[0]) ? findGroup(first) : undefined
    if (group) {
      out(commandHelp(group.command, c))
      return EXIT.ok
    }
    const found = findCommand(argv)
    if (!found) {
      if (first.startsWith('-')) throw new UsageError(`a command comes first (got the flag "${first}")`)
      if (first === 'tools') {
        throw new UsageError(
          rest[0] === undefined || rest[0].startsWith('-')
            ? 'tools needs a sub-command: signalbox tools serve <module>'
            : `no such command "tools ${rest[0]}" (did you mean "tools serve"?)`,
        )
      }
      throw new UsageError(`unknown command "${first}"${suggest(first)}`)
    }
    command = found.command
    const parsed = parseCommandArgs(command, found.args, io)
    if (parsed.values.help) {
      out(commandHelp(command, c))
      return EXIT.ok
    }
    const context: CommandContext = { ...parsed, io, c, out, err, command }
    return await command.run(context)
  } catch (error) {
    if (UsageError.is(error)) {
      const usageOf = error.command ?? command
      err(`${ce.red('error [USAGE]')}: ${error.message}`)
      err('')
      if (usageOf) {
        err(`Usage: signalbox ${usageOf.usage}`)
        err(`Run "signalbox help ${usageOf.name}" for its flags and examples.`)
      } else {
        err('Usage: signalbox <command> [arguments] [flags]')
        err(`Commands: ${COMMANDS.map((cmd) => cmd.name).join(', ')}, help`)
        err('Run "signalbox --help" for more.')
      }
      return EXIT.usage
    }
    err(formatError(error, ce))
    if (io.env.SIGNALBOX_DEBUG && error instanceof Error && error.stack) err(ce.dim(error.stack))
    return EXIT.failed
  }
}

/** `error [CODE]: message` (signalbox errors carry a code; anything else is UNEXPECTED). */
export function formatError(error: unknown, c = createColorizer(false)): string {
  const code = (error as { code?: unknown } | null)?.code
  const message = error instanceof Error ? error.message : String(error)
  if (error instanceof Error && typeof code === 'string' && code !== '')
    return `${c.red(`error [${code}]`)}: ${message}${causeOf(error)}`
  return `${c.red('error [UNEXPECTED]')}: ${message}`
}

function causeOf(error: Error): string {
  const cause = error.cause
  if (!(cause instanceof Error) || error.message.includes(cause.message)) return ''
  return ` (${cause.message})`
}

function findCommand(argv: string[]): { command: Command; args: string[] } | undefined {
  const [first, second] = argv
  // A sub-command first: `runs prune` is not `runs` with an argument.
  for (const command of COMMANDS) {
    const words = command.name.split(' ')
    if (words.length === 2 && words[0] === first && words[1] === second) return { command, args: argv.slice(2) }
  }
  for (const command of COMMANDS) {
    if (command.name === first) return { command, args: argv.slice(1) }
  }
  return undefined
}

const isHelpFlag = (word: string | undefined) => word === '--help' || word === '-h'

/** The one command of a group such as `tools` (`tools serve`), for its help. */
function findGroup(word: string | undefined): { command: Command } | undefined {
  // A word that is a command itself (`runs`) is not a group: `runs --help` is that command's help.
  if (COMMANDS.some((command) => command.name === word)) return undefined
  const members = COMMANDS.filter((command) => command.name.split(' ').length === 2 && command.name.startsWith(`${word} `))
  return members.length === 1 ? { command: members[0] as Command } : undefined
}

function suggest(word: string): string {
  const names = [...COMMANDS.map((command) => command.name.split(' ')[0] as string), 'help']
  const close = names.find((name) => distance(name, word) <= 2)
  return close ? ` (did you mean "${close}"?)` : ''
}

function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i)
  for (let i = 1; i <= a.length; i++) {
    let previous = row[0] as number
    row[0] = i
    for (let j = 1; j <= b.length; j++) {
      const current = row[j] as number
      row[j] = Math.min((row[j] as number) + 1, (row[j - 1] as number) + 1, previous + (a[i - 1] === b[j - 1] ? 0 : 1))
      previous = current
    }
  }
  return row[b.length] as number
}

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
  return `signalbox ${pkg.version}`
}

/** Runs `process.argv` and exits with the command's code. */
export async function runMain(): Promise<void> {
  const code = await main(process.argv.slice(2))
  process.exitCode = code
  // A handle someone forgot (a socket, a timer) must not keep a finished command alive.
  setTimeout(() => process.exit(code), 1_500).unref()
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await runMain()

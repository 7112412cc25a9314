/**
 * The demos' command lines: `--help` prints the usage and exits before anything starts (no model
 * server, no terminal check), and a flag a demo does not know is refused with its usage, exit 2.
 */
import { type ParseArgsConfig, parseArgs } from 'node:util'

type Options = NonNullable<ParseArgsConfig['options']>

/** Model flags every demo takes (see shared/model.ts). */
const MODEL_OPTIONS = { scripted: { type: 'boolean' } } as const satisfies Options

export function demoArgs(
  usage: readonly string[],
  options: Options = {},
  argv: string[] = process.argv.slice(2),
): Record<string, string | boolean | undefined> {
  const text = [
    ...usage,
    '',
    'Offline by default: the scripted model server over HTTP, through the real OpenAIProvider. With',
    'SIGNALBOX_MODEL set (and OPENAI_BASE_URL, OPENAI_API_KEY) it talks to that endpoint instead,',
    'unless --scripted is passed.',
  ].join('\n')
  try {
    const { values } = parseArgs({
      args: argv,
      options: { ...options, ...MODEL_OPTIONS, help: { type: 'boolean', short: 'h' } },
      strict: true,
    })
    if (values.help) {
      console.log(text)
      process.exit(0)
    }
    return values as Record<string, string | boolean | undefined>
  } catch (error) {
    console.error(`${error instanceof Error ? error.message : String(error)}\n\n${text}`)
    process.exit(2)
  }
}

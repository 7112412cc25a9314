/**
 * Loading a user's TypeScript module. The installed CLI is plain JavaScript, so a `.ts` agent or
 * tools module needs a loader: tsx, from the user's project (or next to the CLI). Inside this
 * repository the CLI already runs under tsx or vitest and the first import simply works.
 */
import { createRequire } from 'node:module'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { CliError } from './cli.ts'

const TYPESCRIPT = /\.(?:ts|mts|cts|tsx)$/

/** Node's refusals of a TypeScript file it cannot run by itself. */
const NEEDS_LOADER = new Set([
  'ERR_UNKNOWN_FILE_EXTENSION',
  'ERR_UNSUPPORTED_TYPESCRIPT_SYNTAX',
  'ERR_UNSUPPORTED_NODE_MODULES_TYPE_STRIPPING',
])

let registered: Promise<void> | undefined

export const isTypeScript = (file: string): boolean => TYPESCRIPT.test(file)

export function needsLoader(error: unknown): boolean {
  return NEEDS_LOADER.has((error as { code?: unknown } | null)?.code as string)
}

/** Registers tsx once per process: from the CLI's own resolution, else from `cwd`'s project. */
export function registerTypeScript(spec: string, cwd: string): Promise<void> {
  registered ??= (async () => {
    const api = await importTsx(cwd)
    if (!api) {
      registered = undefined
      throw new CliError(
        'TS_LOADER_MISSING',
        `${spec} is TypeScript, and loading it needs tsx: install it in your project (npm i -D tsx), or compile the module to JavaScript`,
      )
    }
    api.register()
  })()
  return registered
}

type TsxApi = { register: () => unknown }

async function importTsx(cwd: string): Promise<TsxApi | undefined> {
  try {
    return (await import('tsx/esm/api')) as TsxApi
  } catch {
    // Not next to the CLI (e.g. a global install): look in the user's project.
  }
  try {
    const resolved = createRequire(path.join(cwd, 'package.json')).resolve('tsx/esm/api')
    return (await import(pathToFileURL(resolved).href)) as TsxApi
  } catch {
    return undefined
  }
}

/**
 * The packages as a user gets them: built once, packed with pnpm (which applies `publishConfig`),
 * and installed with npm into projects outside the workspace (one per zod major). Shared by the tests in this
 * folder; dependencies (openai, xstate, zod...) come from npm's cache when they are there.
 */
import { execFile } from 'node:child_process'
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { buildPackages } from '../support/built.ts'

export const ROOT = fileURLToPath(new URL('../..', import.meta.url))
export const PACKAGES = ['core', 'actors', 'ai-sdk', 'mcp', 'console', 'otel', 'cli'] as const
export type PackageDir = (typeof PACKAGES)[number]

const execFileAsync = promisify(execFile)

export interface Ran {
  code: number
  stdout: string
  stderr: string
}

/** Aborted by `stopCommands()`: what a test file started does not outlive it. */
let commands = new AbortController()

/** Stops every command still running (a test file's afterAll); the next file's commands start on a fresh signal. */
export function stopCommands(): void {
  commands.abort()
  commands = new AbortController()
}

/**
 * Runs a command to its end; a failing exit is returned, not thrown. No deadline by default:
 * builds, installs and type checks take what the machine's load makes them take, and the test's
 * (or hook's) time limit is the hang guard; `timeoutMs` kills the command after that long.
 */
export async function run(
  command: string,
  args: string[],
  options: { cwd: string; env?: NodeJS.ProcessEnv; timeoutMs?: number },
): Promise<Ran> {
  try {
    const { stdout, stderr } = await execFileAsync(command, args, {
      cwd: options.cwd,
      env: { ...process.env, NO_COLOR: '1', ...options.env },
      timeout: options.timeoutMs ?? 0,
      signal: commands.signal,
      maxBuffer: 32 * 1024 * 1024,
    })
    return { code: 0, stdout, stderr }
  } catch (error) {
    const e = error as { code?: unknown; stdout?: string; stderr?: string; message: string }
    return { code: typeof e.code === 'number' ? e.code : 1, stdout: e.stdout ?? '', stderr: e.stderr ?? e.message }
  }
}

export async function mustRun(command: string, args: string[], options: Parameters<typeof run>[2]): Promise<Ran> {
  const ran = await run(command, args, options)
  if (ran.code !== 0) throw new Error(`${command} ${args.join(' ')} failed (${ran.code}):\n${ran.stdout}\n${ran.stderr}`)
  return ran
}

/** The zod a consumer installs: the peer range's two majors. */
export const ZOD_VERSIONS = { 'zod 4': '^4.0.0', 'zod 3.25': '~3.25.0' } as const
export type ZodLine = keyof typeof ZOD_VERSIONS

export interface Packed {
  /** Tarball path per package folder. */
  tarballs: Record<PackageDir, string>
  /** Deletes the tarballs and every project installed from them. */
  remove(): Promise<void>
}

export interface Installed {
  /** The consumer project, outside the workspace. */
  dir: string
  /** Tarball path per package folder. */
  tarballs: Record<PackageDir, string>
}

let projects = 0

/** Builds the packages and packs each with pnpm (which applies `publishConfig`), into a temporary folder. */
export async function buildAndPack(): Promise<Packed & { base: string }> {
  const base = await mkdtemp(path.join(tmpdir(), 'signalbox-consumer-'))
  const packs = path.join(base, 'packs')
  await mkdir(packs)
  await buildPackages()
  await Promise.all(
    PACKAGES.map((name) => mustRun('pnpm', ['pack', '--pack-destination', packs], { cwd: path.join(ROOT, 'packages', name) })),
  )
  const files = await readdir(packs)
  const tarballs = Object.fromEntries(
    PACKAGES.map((name) => {
      const file = files.find((f) => f.startsWith(`signalbox-${name}-`) && f.endsWith('.tgz'))
      if (!file) throw new Error(`pnpm pack left no tarball for ${name} in ${packs}`)
      return [name, path.join(packs, file)]
    }),
  ) as Record<PackageDir, string>
  return { base, tarballs, remove: () => rm(base, { recursive: true, force: true }) }
}

/**
 * Installs the tarballs, the given zod, an AI SDK provider package, tsx and Node's types into a
 * new project beside them: a fresh one, or a copy of the project `from` that npm then moves to this
 * zod. npm resolves the copy to the tree a fresh project gets (the same tarballs and registry data,
 * and a zod outside a package's peer range still fails with ERESOLVE) for about 2 s of CPU, where a
 * fresh install takes about 11 (it reads every package's metadata and unpacks every package).
 */
export async function installConsumer(packed: Packed & { base: string }, zod: ZodLine, from?: Installed): Promise<Installed> {
  const dir = path.join(packed.base, `app${++projects}`)
  // `cp -a` copies node_modules in a fraction of a second; node's fs.cp takes seconds of CPU for it.
  if (from) await mustRun('cp', ['-a', from.dir, dir], { cwd: packed.base })
  else await mkdir(dir)
  const manifest = {
    name: 'signalbox-consumer',
    private: true,
    type: 'module',
    dependencies: {
      ...Object.fromEntries(PACKAGES.map((name) => [`@signalbox/${name}`, `file:${packed.tarballs[name]}`])),
      zod: ZOD_VERSIONS[zod],
      '@ai-sdk/openai-compatible': '^2.0.0',
      tsx: '^4.0.0',
      '@types/node': '^20.19.0',
    },
  }
  await writeFile(path.join(dir, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`)
  await mustRun('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: dir })
  return { dir, tarballs: packed.tarballs }
}

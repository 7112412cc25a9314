/**
 * `pnpm bench [options]`: builds the packages (`pnpm build`), then runs the bench (index.ts) against
 * the BUILT packages (`dist/`), as users run them. Every Node process the bench starts (the model
 * server, crash children) loads them too (through NODE_OPTIONS).
 *
 *   pnpm bench --src ...   measure the TypeScript sources through tsx instead (no build)
 *   node bench/run.mjs --build-only   build under the lock, measure nothing
 *
 * Builds are serialized by a lock file: two benches started at once (e.g. in two terminals) do not
 * write `dist/` together; the second waits for the first's build, then builds (a no-op when nothing
 * changed). The test suite's setup and its package tests build through `--build-only` too, so all
 * of them share the lock. SIGNALBOX_BUILD_LOCK names another lock file (the lock's own test uses
 * one, so the suite's other builds cannot wait in line with it).
 */
import { spawn, spawnSync } from 'node:child_process'
import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const args = process.argv.slice(2)
const fromSources = args.includes('--src')
const buildOnly = args.includes('--build-only')
const benchArgs = args.filter((a) => a !== '--src' && a !== '--build-only')
const help = benchArgs.includes('--help') || benchArgs.includes('-h')

if (!fromSources && !help) await withBuildLock(build)
if (buildOnly) process.exit(0)

const env = { ...process.env }
if (!fromSources) {
  const hook = pathToFileURL(join(root, 'bench', 'loader', 'use-dist.mjs')).href
  env.NODE_OPTIONS = `${process.env.NODE_OPTIONS ?? ''} --import=${hook}`.trim()
}
const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'bench', 'index.ts'), ...benchArgs], {
  cwd: root,
  env,
  stdio: 'inherit',
})
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal))
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)))

function build() {
  const started = Date.now()
  const result = spawnSync('pnpm', ['--silent', 'build'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
  if (result.status !== 0) {
    process.stderr.write(`${result.stdout ?? ''}${result.stderr ?? ''}`)
    console.error(`pnpm bench: the build failed (exit ${result.status ?? result.signal}); nothing measured.`)
    process.exit(1)
  }
  console.log(`built the packages in ${((Date.now() - started) / 1000).toFixed(1)} s; measuring dist/`)
}

/** Runs `fn` holding the build lock; a lock left by a process that no longer exists is taken over. */
async function withBuildLock(fn) {
  const lock = process.env.SIGNALBOX_BUILD_LOCK || join(root, 'node_modules', '.cache', 'signalbox-build.lock')
  mkdirSync(dirname(lock), { recursive: true })
  let told = false
  for (;;) {
    try {
      const fd = openSync(lock, 'wx')
      writeSync(fd, String(process.pid))
      closeSync(fd)
      break
    } catch (error) {
      if (error.code !== 'EEXIST') throw error
      const text = readFileSync(lock, 'utf8')
      // Empty: its holder has created it and not yet written its pid; look again in a moment (a
      // message now would name no process).
      if (text === '') {
        await new Promise((resolve) => setTimeout(resolve, 10))
        continue
      }
      const holder = Number(text)
      if (!isAlive(holder)) {
        rmSync(lock, { force: true })
        continue
      }
      if (!told) console.log(`waiting for another bench's build (pid ${holder}) to finish`)
      told = true
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
  }
  try {
    fn()
  } finally {
    rmSync(lock, { force: true })
  }
}

function isAlive(pid) {
  if (!Number.isInteger(pid) || pid <= 0) return false
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return error.code === 'EPERM'
  }
}

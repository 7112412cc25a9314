import { type ChildProcess, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { tsScript } from '../../support/built.ts'
import { afterEveryFile } from '../../support/lifecycle.ts'

const ROOT = fileURLToPath(new URL('../../..', import.meta.url))

/** Variables that would change which model or colours a demo uses; a test sets them explicitly. */
const CLEARED = ['SIGNALBOX_MODEL', 'OPENAI_BASE_URL', 'OPENAI_API_KEY', 'NO_COLOR', 'FORCE_COLOR']

/** Examples still running when the test file ends (a hung demo): killed then. */
const running = new Set<ChildProcess>()
afterEveryFile(() => {
  for (const child of running) child.kill('SIGKILL')
})

/**
 * Runs an example as `tsx <script>` would (one process, through the suite's TypeScript loader),
 * from the repository root, with stdout and stderr piped (not a terminal). No deadline of its own: a demo that hangs fails the
 * test at its time limit (start-up under load takes what it takes), and is killed after the file.
 */
export function runExample(
  script: string,
  args: string[] = [],
  extraEnv: Record<string, string> = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env }
  for (const key of CLEARED) delete env[key]
  Object.assign(env, extraEnv)
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...tsScript(script), ...args], {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    running.add(child)
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString('utf8')
    })
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8')
    })
    child.on('error', reject)
    child.on('close', (code) => {
      running.delete(child)
      resolve({ code, stdout, stderr })
    })
  })
}

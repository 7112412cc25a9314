/**
 * Runs `bench/young-retention.ts` (on the built packages) and reads what it printed: KiB a run
 * left through young collections, by variant.
 */
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('../..', import.meta.url))

export function youngRetention(args: string[], signal: AbortSignal): Promise<Record<string, number>> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ['--import', 'tsx', 'bench/young-retention.ts', ...args], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
      signal,
    })
    let stdout = ''
    let stderr = ''
    p.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
    p.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    p.once('error', reject)
    p.once('close', (code) => {
      if (code !== 0) return reject(new Error(`young-retention exited ${code}: ${stderr}`))
      const kept: Record<string, number> = {}
      for (const line of stdout.trim().split('\n')) {
        const match = /^([\w-]+): (-?[\d.]+) KiB a run/.exec(line)
        if (match) kept[match[1] as string] = Number(match[2])
      }
      resolve(kept)
    })
  })
}

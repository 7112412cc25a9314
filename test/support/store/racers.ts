import { type CrashChild, startCrashChild } from '../crash-harness.ts'
import { afterEveryTest } from '../lifecycle.ts'

const children: CrashChild[] = []
afterEveryTest(async () => {
  for (const child of children.splice(0)) await child.kill()
})

/**
 * Starts one process per argument list (`node <compiled script> ...args`, see `tsScript`), waits until all are
 * ready, releases them at once, and returns what each printed as its `result`.
 */
export async function race<T>(script: string, argLists: string[][]): Promise<T[]> {
  const started = await Promise.all(argLists.map((args) => startCrashChild(script, { args, ready: 'ready' })))
  children.push(...started)
  for (const child of started) child.send('go')
  const lines = await Promise.all(started.map((child) => child.waitForLine(/^(result|error) /)))
  return lines.map((line) => {
    if (line.startsWith('error ')) throw new Error(line)
    return JSON.parse(line.slice('result '.length)) as T
  })
}

export interface ClaimResult {
  won: boolean
  owner: string
  code?: string
}

/**
 * The client OpenAIProvider builds keeps its connection to the model endpoint alive between calls
 * (`nodeHttpFetch`), and that idle connection never keeps a process from ending.
 */
import { execFile } from 'node:child_process'
import path from 'node:path'
import { promisify } from 'node:util'
import { startScriptedModelServer } from '@signalbox/core/testing'
import { expect, it } from 'vitest'

it('a process whose last model call is done ends while its keep-alive connection is still open', async () => {
  const server = await startScriptedModelServer({ scripts: { m: () => ({ content: 'hello' }) }, keepAliveTimeoutMs: 120_000 })
  try {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', path.join(import.meta.dirname, 'fixtures', 'idle-connection.ts')],
      { cwd: import.meta.dirname, env: { ...process.env, MODEL_URL: server.url } },
    )
    expect(JSON.parse(stdout.trim().split('\n').at(-1) as string)).toEqual({ content: 'hello', opened: 1, open: 1 })
  } finally {
    await server.close()
  }
}, 60_000)

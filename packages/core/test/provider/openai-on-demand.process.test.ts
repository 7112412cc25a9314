/**
 * The openai SDK (some 150 modules) is loaded by the first model call of an OpenAIProvider, not
 * with @signalbox/core: a CLI command, a tool host or an app on another provider starts without it.
 */
import { execFile } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { expect, it } from 'vitest'

const FIXTURES = path.join(import.meta.dirname, 'fixtures')

/** A port nothing listens on (taken, then let go). */
async function deadPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise((resolve) => server.close(resolve))
  return port
}

it('importing the package and making a provider load no SDK module; the first call loads it and classifies its failure', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'signalbox-loads-'))
  try {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [
        '--import',
        'tsx',
        '--import',
        path.join(FIXTURES, 'record-loads-register.mjs'),
        path.join(FIXTURES, 'openai-on-demand.ts'),
      ],
      { cwd: FIXTURES, env: { ...process.env, LOADS_FILE: path.join(dir, 'loads.txt'), DEAD_PORT: String(await deadPort()) } },
    )
    expect(JSON.parse(stdout.trim().split('\n').at(-1) as string)).toEqual({
      afterImport: false,
      afterConstruct: false,
      afterCall: true,
      // Classified with the SDK's own error classes, loaded by the call.
      code: 'PROVIDER_UNREACHABLE',
      baseURL: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/v1$/),
    })
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}, 60_000)

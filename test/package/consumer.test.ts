/**
 * Installed as a user installs them (see installed.ts): the packed packages pass publint and
 * arethetypeswrong, ship no tests or scratch files, load in plain Node, type-check under
 * `tsc --strict --module nodenext`, run the `signalbox` command and an agent end to end against
 * the scripted model server, and run the README's first example exactly as written.
 */
import { readFileSync } from 'node:fs'
import { readFile, rename, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { type ScriptedModelServer, startScriptedModelServer } from '@signalbox/core/testing'
import { publint } from 'publint'
import { formatMessage } from 'publint/utils'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildPackAndInstall, type Installed, mustRun, PACKAGES, ROOT, run } from './installed.ts'

const tsc = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc')
const attw = path.join(ROOT, 'node_modules', '.bin', 'attw')
/** What a tarball must never carry. */
const NOT_SHIPPED = /(^|\/)(test|tests|fixtures|scratch)\/|\.test\.[cm]?[jt]s$|(^|\/)\.p\d+\.mts$|\.tsbuildinfo$/

let installed: Installed
let model: ScriptedModelServer

/** The first ```ts block of the README, unchanged. */
function readmeFirstExample(): string {
  const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8')
  const match = /```ts\n([\s\S]*?)```/.exec(readme)
  if (!match?.[1]) throw new Error('README.md has no ```ts code block')
  return match[1]
}

const CONSUMER_TS = `import { createAgent, type RunResult, tool, ToolError } from '@signalbox/core'
import { createInProcessBus, type Bus } from '@signalbox/core/bus'
import { decodeMessage, PROTOCOL_VERSION } from '@signalbox/core/protocol'
import { startScriptedModelServer, type Scripts } from '@signalbox/core/testing'
import { remoteReviewer, serveReviewer } from '@signalbox/actors'
import { createLocalInspector } from '@signalbox/actors/inspect'
import { connectNatsBus, type NatsBusOptions } from '@signalbox/actors/nats'
import { createAgentSystem } from '@signalbox/actors/system'
import { defineAgentModule } from '@signalbox/cli'
import { mcpTools } from '@signalbox/mcp'
import { z } from 'zod'

const add = tool({
  name: 'add',
  description: 'Adds two numbers.',
  schema: z.object({ a: z.number(), b: z.number() }),
  execute: ({ a, b }) => {
    const sum: number = a + b
    return sum
  },
})
const bus: Bus = createInProcessBus()
const scripts: Scripts = { m: [{ content: 'hi' }] }
const options: NatsBusOptions = { servers: 'nats://127.0.0.1:4222' }
export const used = [add, bus, scripts, options, createAgent, ToolError, decodeMessage, PROTOCOL_VERSION, startScriptedModelServer,
  remoteReviewer, serveReviewer, createLocalInspector, connectNatsBus, createAgentSystem, defineAgentModule, mcpTools]
export async function output(result: Promise<RunResult>): Promise<string> {
  return (await result).output
}
`

const AGENT_MODULE_TS = `import { defineAgentModule } from '@signalbox/cli'
import { tool } from '@signalbox/core'
import { z } from 'zod'

const add = tool({
  name: 'add',
  description: 'Adds two numbers.',
  schema: z.object({ a: z.number(), b: z.number() }),
  execute: ({ a, b }: { a: number; b: number }) => String(a + b),
})

export default defineAgentModule({ id: 'adder', instructions: 'You add numbers with the add tool.', tools: [add] })
`

const TINY_AGENT_MJS = `import { createAgent, OpenAIProvider, policyReviewer, tool } from '@signalbox/core'
import { createInProcessBus } from '@signalbox/core/bus'
import { remoteReviewer, serveReviewer } from '@signalbox/actors'
import { z } from 'zod'

const bus = createInProcessBus()
const reviews = serveReviewer({ bus, reviewer: policyReviewer(() => true, { name: 'policy' }) })
await reviews.ready
const refund = tool({
  name: 'refund',
  description: 'Refunds an order.',
  schema: z.object({ order: z.string() }),
  needsApproval: true,
  execute: ({ order }) => 'refunded ' + order,
})
const agent = createAgent({
  id: 'shop',
  provider: new OpenAIProvider({ baseURL: process.env.MODEL_URL, model: 'tiny' }),
  tools: [refund],
  reviewer: remoteReviewer({ bus }),
})
const events = []
agent.on('tool.end', (event) => events.push(event.toolName + ':' + event.outcome))
const result = await agent.run('Refund order 42, please.')
reviews.close()
await bus.close()
console.log(JSON.stringify({ status: result.status, output: result.output, events }))
`

beforeAll(async () => {
  installed = await buildPackAndInstall()
  model = await startScriptedModelServer({
    scripts: {
      adder: [{ toolCalls: [{ name: 'add', arguments: { a: 2, b: 3 } }] }, { content: 'The sum is 5.' }],
      tiny: [{ toolCalls: [{ name: 'refund', arguments: { order: '42' } }] }, { content: 'Order 42 is refunded.' }],
      'llama3.1': [
        { toolCalls: [{ name: 'book_ticket', arguments: { train: 3, seat_class: 'first' } }] },
        { toolCalls: [{ name: 'book_ticket', arguments: { train: 3, seat_class: 'tourist' } }] },
        { content: 'You are booked in tourist class on train 3.' },
      ],
    },
  })
  await writeFile(path.join(installed.dir, 'consumer.ts'), CONSUMER_TS)
  await writeFile(path.join(installed.dir, 'agent.ts'), AGENT_MODULE_TS)
  await writeFile(path.join(installed.dir, 'tiny-agent.mjs'), TINY_AGENT_MJS)
  await writeFile(path.join(installed.dir, 'readme-example.ts'), readmeFirstExample())
}, 300_000)

// Type-checking and CLI runs are slow on a loaded machine; nothing here measures time.
const SLOW = 120_000
/** tsc checks every declaration file it reads (openai's, the MCP SDK's...): minutes under a full suite. */
const TSC_TIMEOUT = 300_000

afterAll(async () => {
  await model?.close()
  await installed?.remove()
})

// Checks that only read run side by side; the last one hides tsx, so it runs alone after them.
describe.concurrent('the packed packages', { timeout: SLOW }, () => {
  it.each(PACKAGES)('%s passes publint with no errors or warnings', async (name) => {
    const tarball = await readFile(installed.tarballs[name])
    const { messages, pkg } = await publint({
      pack: { tarball: tarball.buffer.slice(tarball.byteOffset, tarball.byteOffset + tarball.byteLength) as ArrayBuffer },
      level: 'warning',
    })
    expect(messages.map((m) => `${m.type}: ${formatMessage(m, pkg)}`)).toEqual([])
  })

  it.each(PACKAGES)('%s passes arethetypeswrong (ESM only: node16 and bundler resolution)', async (name) => {
    const ran = await run(attw, [installed.tarballs[name], '--profile', 'esm-only', '--format', 'table-flipped'], { cwd: ROOT })
    expect(ran.code, `${ran.stdout}\n${ran.stderr}`).toBe(0)
  })

  it.each(PACKAGES)('%s: npm pack lists the build, and no tests, fixtures or scratch files', async (name) => {
    const ran = await mustRun('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
      cwd: path.join(ROOT, 'packages', name),
    })
    const [report] = JSON.parse(ran.stdout) as { files: { path: string }[] }[]
    const files = report?.files.map((f) => f.path) ?? []
    expect(files).toContain('dist/index.js')
    expect(files).toContain('dist/index.d.ts')
    expect(files).toContain('README.md')
    expect(files.filter((f) => NOT_SHIPPED.test(f))).toEqual([])
    // What pnpm packed (exports and bin rewritten to the build) carries none either.
    const listed = await mustRun('tar', ['tzf', installed.tarballs[name]], { cwd: ROOT })
    const packed = listed.stdout
      .trim()
      .split('\n')
      .map((f) => f.replace(/^package\//, ''))
    expect(packed.filter((f) => NOT_SHIPPED.test(f))).toEqual([])
  })
})

describe.concurrent('installed from the tarballs, outside the workspace', { timeout: SLOW }, () => {
  it('every entry point loads in plain Node ESM, and sources and internals stay unreachable by path', async () => {
    const script = `
      const entries = ['@signalbox/core', '@signalbox/core/bus', '@signalbox/core/protocol', '@signalbox/core/testing',
        '@signalbox/actors', '@signalbox/actors/nats', '@signalbox/actors/inspect', '@signalbox/actors/system',
        '@signalbox/mcp', '@signalbox/cli']
      const loaded = {}
      for (const e of entries) loaded[e] = Object.keys(await import(e)).length
      const refused = []
      for (const e of ['@signalbox/core/src/index.ts', '@signalbox/core/dist/agent.js', '@signalbox/actors/requests']) {
        try { await import(e) } catch (error) { refused.push(error.code) }
      }
      const { createAgent } = await import('@signalbox/core')
      console.log(JSON.stringify({ loaded, refused, createAgent: typeof createAgent }))`
    const ran = await mustRun('node', ['--input-type=module', '-e', script], { cwd: installed.dir })
    const out = JSON.parse(ran.stdout) as { loaded: Record<string, number>; refused: string[]; createAgent: string }
    expect(Object.values(out.loaded).every((n) => n > 0)).toBe(true)
    expect(out.refused).toEqual([
      'ERR_PACKAGE_PATH_NOT_EXPORTED',
      'ERR_PACKAGE_PATH_NOT_EXPORTED',
      'ERR_PACKAGE_PATH_NOT_EXPORTED',
    ])
    expect(out.createAgent).toBe('function')
    // One copy of each: the packages depend on the installed @signalbox/core, not a second one.
    const nested = await run('find', ['node_modules', '-path', '*/node_modules/*/node_modules/@signalbox'], {
      cwd: installed.dir,
    })
    expect(nested.stdout.trim()).toBe('')
  })

  it(
    'a consumer file and the README example type-check with tsc --strict --module nodenext',
    async () => {
      const ran = await run('node', [tsc, '--strict', '--module', 'nodenext', '--noEmit', 'consumer.ts', 'readme-example.ts'], {
        cwd: installed.dir,
        timeoutMs: TSC_TIMEOUT - 5_000,
      })
      expect(`${ran.stdout}${ran.stderr}`).toBe('')
      expect(ran.code).toBe(0)
    },
    TSC_TIMEOUT,
  )

  it('`npx signalbox --help` runs the built CLI with plain node', async () => {
    const ran = await mustRun('npx', ['--no-install', 'signalbox', '--help'], { cwd: installed.dir })
    expect(ran.stdout).toMatch(/signalbox/)
    expect(ran.stdout).toMatch(/\brun\b/)
    const bin = await readFile(path.join(installed.dir, 'node_modules', '@signalbox', 'cli', 'package.json'), 'utf8')
    expect((JSON.parse(bin) as { bin: Record<string, string> }).bin.signalbox).toBe('./dist/bin.js')
  })

  it('`npx signalbox run` loads a .ts agent module (tsx from the project) and runs it against the scripted model', async () => {
    const ran = await run('npx', ['--no-install', 'signalbox', 'run', 'agent.ts', 'What is 2 + 3?'], {
      cwd: installed.dir,
      env: { OPENAI_BASE_URL: model.url, SIGNALBOX_MODEL: 'adder' },
    })
    expect(ran.code, `${ran.stdout}\n${ran.stderr}`).toBe(0)
    expect(ran.stdout).toContain('The sum is 5.')
    const [, second] = model.requestsFor('adder')
    expect(second?.messages.at(-1)).toMatchObject({ role: 'tool', content: '5' })
  })

  it('a tiny agent built from the installed packages runs end to end (tool, approval over the bus, answer)', async () => {
    const ran = await mustRun('node', ['tiny-agent.mjs'], { cwd: installed.dir, env: { MODEL_URL: model.url } })
    const out = JSON.parse(ran.stdout.trim().split('\n').at(-1) ?? '{}') as { status: string; output: string; events: string[] }
    expect(out).toEqual({ status: 'done', output: 'Order 42 is refunded.', events: ['refund:executed'] })
    expect(model.requestsFor('tiny')[1]?.messages.at(-1)).toMatchObject({ role: 'tool', content: 'refunded 42' })
  })

  it("the README's first example runs unchanged", async () => {
    const ran = await mustRun('npx', ['--no-install', 'tsx', 'readme-example.ts'], {
      cwd: installed.dir,
      env: { OPENAI_BASE_URL: model.url },
    })
    expect(ran.stdout).toContain('You are booked in tourist class on train 3.')
    expect(ran.stdout).toContain('Booked a tourist seat on train 3.')
    const requests = model.requestsFor('llama3.1')
    expect(requests).toHaveLength(3)
    expect(requests[1]?.messages.at(-1)).toMatchObject({ role: 'tool' })
    expect(JSON.stringify(requests[1]?.messages.at(-1))).toContain('Blocked by policy')
  })
})

describe('installed, without tsx', () => {
  it('without tsx, `signalbox run` on a .ts module says how to get it', async () => {
    const tsxDir = path.join(installed.dir, 'node_modules', 'tsx')
    await rename(tsxDir, `${tsxDir}.away`)
    try {
      const ran = await run('node', [path.join('node_modules', '@signalbox', 'cli', 'dist', 'bin.js'), 'run', 'agent.ts', 'hi'], {
        cwd: installed.dir,
        env: { OPENAI_BASE_URL: model.url, SIGNALBOX_MODEL: 'adder' },
      })
      expect(ran.code).not.toBe(0)
      expect(ran.stderr).toContain('npm i -D tsx')
    } finally {
      await rename(`${tsxDir}.away`, tsxDir)
    }
  })
})

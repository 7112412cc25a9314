/**
 * Installed as a user installs them (see installed.ts): the packed packages pass publint and
 * arethetypeswrong, ship no tests or scratch files, load in plain Node, type-check under
 * `tsc --strict --module nodenext` with skipLibCheck off (every declaration file with zod 4, ours
 * with zod 3.25), run structured output, tools and a reviewer with either zod, run the `signalbox`
 * command and an agent end to end against the scripted model server, and run the README's first
 * example exactly as written.
 */
import { readFile, rename, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { type ScriptedModelServer, startScriptedModelServer } from '@signalbox/core/testing'
import { publint } from 'publint'
import { formatMessage } from 'publint/utils'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  AGENT_MODULE_TS,
  CONSUMER_TS,
  ENTRY_POINTS_TS,
  readmeFirstExample,
  TINY_AGENT_MJS,
  zodConsumerTs,
} from './consumer-files.ts'
import {
  buildAndPack,
  type Installed,
  installConsumer,
  mustRun,
  PACKAGES,
  type Packed,
  ROOT,
  run,
  stopCommands,
  ZOD_VERSIONS,
  type ZodLine,
} from './installed.ts'

const tsc = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc')
const checkDeclarations = fileURLToPath(new URL('./check-declarations.mjs', import.meta.url))
const areTheTypesWrong = fileURLToPath(new URL('./are-the-types-wrong.mjs', import.meta.url))
/** How a user with the strictest settings checks the project: `tsc <TSC_FLAGS> <files>`. */
const TSC_FLAGS = ['--strict', '--module', 'nodenext', '--skipLibCheck', 'false', '--noEmit']
/** The consumer's files that tsc checks (and, through them, the declaration files they reach). */
const TYPE_CHECKED = ['consumer.ts', 'readme-example.ts', 'entry-points.ts', 'zod-consumer.ts']
/** The zod line whose consumer tsc checks in full, the dependencies' declarations included. */
const FULL_CHECK: ZodLine = 'zod 4'
/** What a tarball must never carry. */
const NOT_SHIPPED = /(^|\/)(test|tests|fixtures|scratch)\/|\.test\.[cm]?[jt]s$|(^|\/)\.p\d+\.mts$|\.tsbuildinfo$/

let packed: Packed
/** The consumer on zod 4; `consumers` has one per zod major. */
let installed: Installed
const consumers = {} as Record<ZodLine, Installed>
let model: ScriptedModelServer

beforeAll(async () => {
  const built = await buildAndPack()
  packed = built
  const lines = Object.keys(ZOD_VERSIONS) as ZodLine[]
  // One fresh install; the other zod lines start from a copy of it (see installConsumer).
  installed = await installConsumer(built, 'zod 4')
  for (const line of lines) consumers[line] = line === 'zod 4' ? installed : await installConsumer(built, line, installed)
  model = await startScriptedModelServer({
    scripts: {
      adder: [{ toolCalls: [{ name: 'add', arguments: { a: 2, b: 3 } }] }, { content: 'The sum is 5.' }],
      ...Object.fromEntries(
        (Object.keys(ZOD_VERSIONS) as ZodLine[]).map((line) => [
          shopModel(line),
          [
            {
              toolCalls: [
                { name: 'lookup', arguments: { order: 'a-7' } },
                { name: 'refund', arguments: { order: 'a-7', amount: 42 } },
              ],
            },
            { content: '{"order":"a-7","refunded":42,"status":"done"}' },
          ],
        ]),
      ),
      ...Object.fromEntries(
        (Object.keys(ZOD_VERSIONS) as ZodLine[]).map((line) => [
          `${shopModel(line)}-ai-sdk`,
          [
            {
              toolCalls: [{ name: 'lookup', arguments: { order: 'a-7', withItems: true } }],
              usage: { promptTokens: 20, completionTokens: 5 },
            },
            { content: '{"order":"a-7","found":true}', usage: { promptTokens: 30, completionTokens: 7 } },
          ],
        ]),
      ),
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
  for (const line of lines) {
    const { dir } = consumers[line]
    await writeFile(path.join(dir, 'readme-example.ts'), readmeFirstExample())
    await writeFile(path.join(dir, 'entry-points.ts'), ENTRY_POINTS_TS)
    await writeFile(path.join(dir, 'zod-consumer.ts'), zodConsumerTs(line))
    if (line !== 'zod 4') await writeFile(path.join(dir, 'consumer.ts'), CONSUMER_TS)
  }
}, 400_000)

const shopModel = (line: ZodLine) => `shop-${line.replace(/\W+/g, '-')}`

// Type-checking and CLI runs are slow on a loaded machine; nothing here measures time.
const SLOW = 120_000
/** tsc checks every declaration file it reads (openai's, the MCP SDK's...): minutes under a full suite. */
const TSC_TIMEOUT = 300_000

afterAll(async () => {
  stopCommands()
  await model?.close()
  await packed?.remove()
})

/** attw's verdict on each tarball, by path: one process for all of them (each attw run loads TypeScript again). */
let attwReports: Promise<Record<string, { code: number; report: string }>> | undefined

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
    attwReports ??= run('node', [areTheTypesWrong, 'esm-only', ...PACKAGES.map((dir) => installed.tarballs[dir])], {
      cwd: ROOT,
    }).then((ran) => {
      try {
        return JSON.parse(ran.stdout)
      } catch {
        throw new Error(`attw failed (${ran.code}):\n${ran.stdout}\n${ran.stderr}`)
      }
    })
    const result = (await attwReports)[installed.tarballs[name]]
    expect(result?.code, result?.report).toBe(0)
  })

  // The tarball itself, not `npm pack --dry-run`: it is what installs and what gets published (pnpm
  // rewrites exports and bin to the build; npm would pack the workspace manifest, source bin included).
  it.each(PACKAGES)('%s: the tarball carries the build and the README, and no tests, fixtures or scratch files', async (name) => {
    const listed = await mustRun('tar', ['tzf', installed.tarballs[name]], { cwd: ROOT })
    const files = listed.stdout
      .trim()
      .split('\n')
      .map((f) => f.replace(/^package\//, ''))
    expect(files).toContain('dist/index.js')
    expect(files).toContain('dist/index.d.ts')
    expect(files).toContain('README.md')
    expect(files.filter((f) => NOT_SHIPPED.test(f))).toEqual([])
  })
})

describe.concurrent('installed from the tarballs, outside the workspace', { timeout: SLOW }, () => {
  it('every entry point loads in plain Node ESM, and sources and internals stay unreachable by path', async () => {
    const script = `
      const entries = ['@signalbox/core', '@signalbox/core/bus', '@signalbox/core/protocol', '@signalbox/core/testing',
        '@signalbox/actors', '@signalbox/actors/nats', '@signalbox/actors/inspect', '@signalbox/actors/system',
        '@signalbox/ai-sdk', '@signalbox/mcp', '@signalbox/cli']
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

  it('without the optional peer @statelyai/inspect, /inspect loads and draws Mermaid, and a Stately view says what to install', async () => {
    const script = `
      const { existsSync } = await import('node:fs')
      const inspect = await import('@signalbox/actors/inspect')
      const { createAgent } = await import('@signalbox/core')
      const machine = createAgent({ provider: { model: 'none', complete: async () => ({}) } }).machine
      const mermaid = inspect.statechartToMermaid(machine)
      const error = await inspect.createLocalInspector({ port: 1 }).catch((e) => e)
      console.log(JSON.stringify({
        installed: existsSync('node_modules/@statelyai/inspect'),
        mermaid: mermaid.includes('stateDiagram'),
        code: error.code,
        message: error.message,
      }))`
    const ran = await mustRun('node', ['--input-type=module', '-e', script], { cwd: installed.dir })
    expect(JSON.parse(ran.stdout)).toEqual({
      installed: false,
      mermaid: true,
      code: 'INSPECTOR_UNAVAILABLE',
      message: expect.stringContaining('npm install @statelyai/inspect@"^0.7.2"'),
    })
  })

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

describe.concurrent.each(Object.keys(ZOD_VERSIONS) as ZodLine[])('installed with %s', (line) => {
  if (line === FULL_CHECK) {
    it(
      "tsc --strict --module nodenext with skipLibCheck off passes: the consumer files, the README example and every declaration file they reach, the dependencies' included",
      async () => {
        const ran = await run('node', [tsc, ...TSC_FLAGS, ...TYPE_CHECKED], { cwd: consumers[line].dir })
        expect(`${ran.stdout}${ran.stderr}`).toBe('')
        expect(ran.code).toBe(0)
      },
      TSC_TIMEOUT,
    )
  } else {
    // tsc's errors in our files only: the dependencies' declarations are theirs, checked in full on
    // the other line (above), and half of tsc's time.
    it(
      'the consumer files, the README example and every @signalbox declaration file of every entry point type-check as tsc --strict --module nodenext with skipLibCheck off checks them',
      async () => {
        const ran = await run('node', [checkDeclarations, ...TSC_FLAGS, ...TYPE_CHECKED], { cwd: consumers[line].dir })
        expect(ran.stderr).toBe('')
        const { checked, errors } = JSON.parse(ran.stdout) as { checked: string[]; errors: string }
        expect(errors).toBe('')
        expect(ran.code).toBe(0)
        expect(checked).toEqual(expect.arrayContaining(TYPE_CHECKED))
        // Every package's declarations were among the files checked.
        expect(checked).toEqual(
          expect.arrayContaining(PACKAGES.map((dir) => path.join('node_modules', '@signalbox', dir, 'dist', 'index.d.ts'))),
        )
      },
      TSC_TIMEOUT,
    )
  }

  it('structured output, a zod 4 tool, a zod 3 tool and a reviewer over the bus run, on OpenAIProvider and on an AI SDK provider, and nothing is printed on stderr', async () => {
    const ran = await mustRun('npx', ['--no-install', 'tsx', 'zod-consumer.ts'], {
      cwd: consumers[line].dir,
      env: { MODEL_URL: model.url, MODEL: shopModel(line) },
    })
    // zod 3.25's converter printed "Invalid target: draft-07" for every tool.
    expect(ran.stderr).toBe('')
    const out = JSON.parse(ran.stdout.trim().split('\n').at(-1) ?? '{}') as {
      status: string
      receipt: unknown
      events: string[]
      aiSdk: unknown
    }
    expect(out.status).toBe('done')
    expect(out.receipt).toEqual({ order: 'a-7', refunded: 42, status: 'done' })
    expect(out.events.sort()).toEqual(['decided:true:policy', 'lookup:executed', 'refund:executed'])
    const [first, second] = model.requestsFor(shopModel(line))
    expect(first?.tools.find((t) => t.name === 'lookup')?.parameters).toEqual({
      type: 'object',
      properties: { order: { type: 'string' }, withItems: { type: 'boolean', default: false } },
      required: ['order'],
    })
    expect(first?.tools.find((t) => t.name === 'refund')?.parameters).toMatchObject({
      properties: { order: { type: 'string', minLength: 1 }, amount: { type: 'number', exclusiveMinimum: 0 } },
      required: ['order', 'amount'],
    })
    expect(first?.body).toMatchObject({
      response_format: {
        type: 'json_schema',
        json_schema: {
          strict: true,
          schema: { required: ['order', 'refunded', 'status'], additionalProperties: false },
        },
      },
    })
    // Each tool's output as the model read it: zod 3 filled the default, the zod 4 schema checked the amount.
    expect(second?.messages.slice(-2).map((m) => m.content)).toEqual(['{"order":"a-7","items":false}', 'refunded 42.00 on A-7'])
    // On @ai-sdk/openai-compatible: the zod 3 tool ran, the answer was parsed, usage counted.
    expect(out.aiSdk).toEqual({ found: { order: 'a-7', found: true }, tokens: 62 })
    const viaAiSdk = model.requestsFor(`${shopModel(line)}-ai-sdk`)
    expect(viaAiSdk[1]?.messages.at(-1)).toMatchObject({ role: 'tool', content: '{"order":"a-7","items":true}' })
    expect(viaAiSdk[0]?.body).toMatchObject({ response_format: { type: 'json_schema' } })
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

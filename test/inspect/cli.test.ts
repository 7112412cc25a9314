/**
 * `signalbox graph` and `signalbox inspect`, through the CLI's real entry point: `main()` in this
 * process for quick cases, and a real `signalbox inspect` process (real NATS) stopped with Ctrl-C.
 */
import { randomBytes } from 'node:crypto'
import { readFileSync, rmSync } from 'node:fs'
import net from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PassThrough } from 'node:stream'
import { createBusInspector } from '@signalbox/actors/inspect'
import { connectNatsBus } from '@signalbox/actors/nats'
import {
  type CommandContext,
  type CommandIO,
  createColorizer,
  main,
  RUN_INSPECT_OPTIONS,
  startRunInspection,
} from '@signalbox/cli/internal'
import { createAgent, HOOK_POINTS } from '@signalbox/core'
import { createInProcessBus, createSubjects } from '@signalbox/core/bus'
import { ScriptedProvider } from '@signalbox/core/testing'
import { afterAll, describe, expect, it, onTestFinished } from 'vitest'
import { NATS_URL, uniquePrefix } from '../support/env.ts'
import { freePort } from '../support/nats-server.ts'
import { connectCollector, deleteStream, eventually, runScript, type ScriptProcess } from './support.ts'

async function runCli(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = ''
  let stderr = ''
  const writer = (append: (text: string) => void) =>
    Object.assign(new PassThrough(), {
      write(chunk: string | Uint8Array) {
        append(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8'))
        return true
      },
      isTTY: false,
    })
  const io: CommandIO = {
    stdout: writer((t) => {
      stdout += t
    }),
    stderr: writer((t) => {
      stderr += t
    }),
    stdin: new PassThrough(),
    env: { PATH: process.env.PATH, NO_COLOR: '1' },
    cwd: process.cwd(),
  }
  const code = await main(argv, io)
  return { code, stdout, stderr }
}

describe('signalbox graph', () => {
  it("prints the agent machine's statechart as Mermaid, every hook point marked", async () => {
    const { code, stdout } = await runCli(['graph'])
    expect(code).toBe(0)
    expect(stdout.startsWith('stateDiagram-v2\n')).toBe(true)
    for (const hook of HOOK_POINTS) {
      expect(stdout).toMatch(new RegExp(`^\\s*${hook} : \\[hook point\\]`, 'm'))
      expect(stdout).toMatch(new RegExp(`^\\s*running${hook[0]?.toUpperCase()}${hook.slice(1)} : \\[hook point, wait\\]`, 'm'))
    }
    for (const state of ['idle', 'callingModel', 'awaitingApproval', 'executingTool', 'done', 'failed', 'cancelled']) {
      expect(stdout).toMatch(new RegExp(`^\\s*${state} : ${state}$`, 'm'))
    }
    expect(stdout).toContain('awaitingApproval --> executingTool : approval.decision')
  })

  it('--markdown fences it; --json wraps it; --brief drops descriptions', async () => {
    const markdown = await runCli(['graph', '--markdown', '--direction', 'LR'])
    expect(markdown.stdout.startsWith('```mermaid\nstateDiagram-v2\n  direction LR\n')).toBe(true)
    expect(markdown.stdout.endsWith('```\n')).toBe(true)
    const json = await runCli(['graph', '--json', '--brief'])
    const parsed = JSON.parse(json.stdout) as { format: string; diagram: string }
    expect(parsed.format).toBe('mermaid')
    expect(parsed.diagram).toContain('beforeTurn : [hook point]\n')
    expect(parsed.diagram).not.toContain('Waiting for a reviewer')
    expect((await runCli(['graph', 'extra'])).code).toBe(2)
  })
})

describe('signalbox inspect', () => {
  const prefix = uniquePrefix()
  const record = join(tmpdir(), `signalbox-cli-inspect-${randomBytes(3).toString('hex')}.jsonl`)
  let cli: ScriptProcess | undefined

  afterAll(() => {
    cli?.kill()
    rmSync(record, { force: true })
  })

  it('relays the bus to the inspector page, records JSONL, and exits cleanly on Ctrl-C', async () => {
    const port = await freePort()
    cli = runScript('packages/cli/src/main.ts', [
      'inspect',
      '--nats',
      NATS_URL,
      '--prefix',
      prefix,
      '--port',
      String(port),
      '--record',
      record,
    ])
    const banner = await eventually(
      () => (cli?.stdout().includes('Ctrl-C to stop') ? cli.stdout() : undefined),
      20_000,
      'the banner',
    ).catch((error: Error) => {
      throw new Error(`${error.message}\nstdout: ${cli?.stdout()}\nstderr: ${cli?.stderr()}`)
    })
    expect(banner).toContain(`page   http://localhost:${port}`)
    expect(banner).toContain('embeds https://stately.ai/inspect')
    expect(banner).toContain('needs internet')
    expect(banner).toContain('work offline')
    expect(banner).toContain(`record ${record}`)

    // Another runtime publishes on the bus; a client of the page's WebSocket receives it.
    const page = await connectCollector(port)
    onTestFinished(() => page.close())
    const bus = await connectNatsBus({
      servers: NATS_URL,
      prefix,
      name: 'cli-inspect-test',
      durable: { storage: 'memory' },
      drainTimeoutMs: 1_000,
    })
    onTestFinished(async () => {
      await deleteStream(bus)
      await bus.close()
    })
    const inspector = createBusInspector({ bus, subjects: createSubjects(prefix), runtimeId: 'elsewhere' })
    inspector.actor('reviewer', 'night shift')
    inspector.event('run:run_1', 'reviewer', { type: 'approval.request', requestId: 'request_1' })
    await bus.flush()
    await eventually(() => page.events.length >= 2, 5_000, 'the page to receive both events')
    expect(page.events.map((e) => [e.type, e.sessionId])).toEqual([
      ['@xstate.actor', 'elsewhere:reviewer'],
      ['@xstate.event', 'elsewhere:reviewer'],
    ])
    const lines = await eventually(
      () => {
        const all = readFileSync(record, 'utf8').split('\n').filter(Boolean)
        return all.length >= 2 ? all : undefined
      },
      5_000,
      'the record',
    )
    expect(lines.map((line) => JSON.parse(line).id)).toEqual(page.events.map((e) => e.id))

    cli.child.kill('SIGINT')
    expect(await cli.exited).toBe(0)
    expect(cli.stdout()).toContain('relayed 2 events')
    await page.closed
  })

  it('a port in use is a clear error (exit 1)', async () => {
    const blocker = net.createServer()
    await new Promise<void>((resolve) => blocker.listen(0, resolve))
    onTestFinished(() => new Promise<void>((resolve) => blocker.close(() => resolve())))
    const port = (blocker.address() as net.AddressInfo).port
    const result = await runCli(['inspect', '--nats', NATS_URL, '--prefix', uniquePrefix(), '--port', String(port)])
    expect(result.code).toBe(1)
    expect(result.stderr).toContain(`error [INSPECTOR_PORT_IN_USE]: Port ${port} is in use`)
    expect((await runCli(['inspect', '--nats', NATS_URL, '--port', 'eighty'])).code).toBe(2)
  })
})

describe('signalbox run --inspect (the pieces run offers)', () => {
  const context = (values: CommandContext['values'], lines: string[]) =>
    ({
      values,
      positionals: [],
      global: { nats: undefined, prefix: 'signalbox.v1', json: false },
      io: { env: {}, cwd: process.cwd() },
      c: createColorizer(false),
      out: (line = '') => lines.push(line),
      err: (line = '') => lines.push(line),
      command: { name: 'run' },
    }) as unknown as CommandContext

  it('embedded: a local inspector page the run streams to; nothing without the flag', async () => {
    expect(Object.keys(RUN_INSPECT_OPTIONS)).toEqual(['inspect', 'inspect-port', 'inspect-contents'])
    const bus = createInProcessBus()
    onTestFinished(() => bus.close())
    const subjects = createSubjects()
    const off = await startRunInspection(context({}, []), { mode: 'embedded', bus, subjects })
    expect(off.inspect).toBeUndefined()

    const port = await freePort()
    const lines: string[] = []
    const inspection = await startRunInspection(context({ inspect: true, 'inspect-port': String(port) }, lines), {
      mode: 'embedded',
      bus,
      subjects,
    })
    onTestFinished(() => inspection.stop())
    expect(lines.join('\n')).toContain(`http://localhost:${port}`)
    const page = await connectCollector(port)
    onTestFinished(() => page.close())
    const agent = createAgent({
      id: 'quick',
      provider: new ScriptedProvider({ script: [{ content: 'hi' }] }),
      ...(inspection.inspect ? { inspect: inspection.inspect } : {}),
    })
    const result = await agent.run('hello')
    await eventually(
      () =>
        page.events.some(
          (e) => e.sessionId === `run:${result.runId}` && e.type === '@xstate.snapshot' && e.snapshot.status === 'done',
        ),
      5_000,
      'the run on the page',
    )
  })
})

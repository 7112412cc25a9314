/**
 * The rough edges a new user hit, each pinned: help for a command group and for `help` itself,
 * a failed run's error printed once, JetStream off, a clashing inspector port, a reviewer with
 * no name, and the README's command table.
 */
import { readFileSync } from 'node:fs'
import net from 'node:net'
import { PassThrough } from 'node:stream'
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest'
import { runMain } from '../../../test/support/cli-in-process.ts'
import { type NatsServer, startNatsServer } from '../../../test/support/nats-server.ts'
import type { CommandIO } from '../src/cli.ts'
import { COMMANDS, main } from '../src/main.ts'

const count = (text: string, part: string) => text.split(part).length - 1

describe('help', () => {
  it.each([
    ['tools', '--help'],
    ['tools', '-h'],
    ['help', 'tools'],
  ])('`%s %s` shows the help of tools serve', async (...argv) => {
    const result = await runMain(argv)
    expect(result.code, result.output).toBe(0)
    expect(result.stdout).toContain('signalbox tools serve: host the tools a module exports')
    expect(result.stdout).toContain('Usage: signalbox tools serve <module>')
  })

  it('`help --help` shows the overview', async () => {
    const result = await runMain(['help', '--help'])
    expect(result.code, result.output).toBe(0)
    expect(result.stdout).toContain('Usage: signalbox <command> [arguments] [flags]')
    expect(result.stderr).toBe('')
  })

  it('`tools` alone still asks for its sub-command', async () => {
    const result = await runMain(['tools'])
    expect(result.code).toBe(2)
    expect(result.stderr).toContain('tools needs a sub-command: signalbox tools serve <module>')
  })
})

describe('signalbox run: a failed run', () => {
  it('prints the error once, in the summary', async () => {
    const result = await runMain(['run', 'test/cli/fixtures/local-agent.ts', '--scripted', '--model', 'broken'])
    expect(result.code).toBe(1)
    expect(count(result.output, 'the model refuses this request')).toBe(1)
    expect(result.stdout).toMatch(/✘ failed: PROVIDER_REJECTED: .*the model refuses this request/)
    // The run's end is still traced, without repeating why.
    expect(result.stdout).toMatch(/run\.end\s+failed · 1 turn/)
  })

  it('a port clash for --inspect names --inspect-port', async () => {
    const blocker = net.createServer()
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve))
    onTestFinished(() => new Promise<void>((resolve) => blocker.close(() => resolve())))
    const port = (blocker.address() as net.AddressInfo).port
    const result = await runMain([
      'run',
      'test/cli/fixtures/local-agent.ts',
      '--scripted',
      '--model',
      'approved',
      '--auto',
      'approve',
      '--inspect',
      '--inspect-port',
      String(port),
    ])
    expect(result.code).toBe(1)
    expect(result.stderr).toContain(
      `error [INSPECTOR_PORT_IN_USE]: Port ${port} is in use: pick another one with --inspect-port <port>.`,
    )
    expect(result.stderr).not.toContain('(--port)')
  })
})

describe('a NATS server without JetStream', () => {
  let server: NatsServer
  beforeAll(async () => {
    server = await startNatsServer({ jetstream: false })
  })
  afterAll(() => server?.dispose())

  it.each([['audit'], ['steer', 'claw', 'stop', '--from', 'ops'], ['watch']])(
    '`%s` says to start nats-server -js',
    async (...argv) => {
      const result = await runMain([...argv, '--nats', server.url])
      expect(result.code).toBe(1)
      expect(result.stderr).toContain('error [BUS_JETSTREAM_DISABLED]')
      expect(result.stderr).toContain('runs without JetStream')
      expect(result.stderr).toContain('Start it with JetStream on: nats-server -js')
    },
  )
})

describe('who decides, without $USER', () => {
  const noUser = { env: { USER: undefined } }

  it('the reviewer refuses without --as NAME instead of calling itself "terminal"', async () => {
    const refused = await runMain(['review', '--nats', 'nats://127.0.0.1:1'], noUser)
    expect(refused.code).toBe(2)
    expect(refused.stderr).toContain('$USER is not set and the audit records a real name: pass --as NAME')
    // With a name it goes on (and meets the unreachable server).
    const named = await runMain(['review', '--as', 'tina', '--nats', 'nats://127.0.0.1:1'], noUser)
    expect(named.code).toBe(1)
    expect(named.stderr).toContain('BUS_CONNECT_FAILED')
  })

  it('run at a terminal asks for --as NAME before a person decides anything', async () => {
    // A terminal on both sides: `run` would prompt here, so it needs a name for the audit.
    const tty = () => Object.assign(new PassThrough(), { isTTY: true, columns: 100 })
    const stderr = tty()
    let errors = ''
    stderr.on('data', (chunk: Buffer) => {
      errors += chunk.toString('utf8')
    })
    const stdout = tty()
    stdout.resume()
    const io: CommandIO = {
      stdin: tty(),
      stdout,
      stderr,
      env: { PATH: process.env.PATH, NO_COLOR: '1' },
      cwd: new URL('../../..', import.meta.url).pathname,
    }
    const code = await main(['run', 'test/cli/fixtures/local-agent.ts', '--scripted', '--model', 'approved'], io)
    expect(code).toBe(2)
    expect(errors).toContain('$USER is not set and the audit records a real name: pass --as NAME')
  })
})

describe('README', () => {
  it('lists every command in its command table', () => {
    const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8')
    const start = readme.indexOf('### The command line')
    const table = readme.slice(start, readme.indexOf('\n## ', start))
    for (const command of COMMANDS) expect(table).toContain(`| \`signalbox ${command.name}`)
    expect(table).toMatch(/`signalbox status <agent>`/)
    expect(table).toMatch(/`signalbox cancel <agent>`/)
  })
})

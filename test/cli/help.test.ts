/**
 * The `signalbox` command as a person first meets it: help for every command, and clear errors
 * with exit code 2 for what it cannot parse, 1 for what fails. The bin itself runs as a real child
 * process for the overview and an unknown command; every command's help and the other errors are
 * the same `main(argv, io)` run in this process (a process each would cost a second of start-up).
 */
// The command table, not the public API: importing main.ts from a module `signalbox run` loads would form a cycle.

import { COMMANDS } from '@signalbox/cli/internal'
import { afterEach, describe, expect, it } from 'vitest'
import { runMain } from '../support/cli-in-process.ts'
import { cleanupAll, runCli } from './support.ts'

afterEach(cleanupAll)

/** The flags a command's help must mention: its own and the global ones it uses. */
function flagsOf(command: (typeof COMMANDS)[number]): string[] {
  const own = Object.keys(command.options).map((name) => `--${name}`)
  const global = command.bus === 'none' ? ['--json', '--help'] : ['--nats', '--prefix', '--json', '--help']
  return [...own, ...global]
}

describe('signalbox help', () => {
  it('--help on every command exits 0 and lists its usage, flags, defaults and an example', async () => {
    for (const command of COMMANDS) {
      const result = await runMain([...command.name.split(' '), '--help'])
      expect(result.code, `${command.name} --help: ${result.output}`).toBe(0)
      const help = result.stdout
      expect(help).toContain(`Usage: signalbox ${command.usage}`)
      for (const flag of flagsOf(command)) expect(help, `${command.name} help mentions ${flag}`).toContain(flag)
      expect(help).toContain('Examples:')
      expect(help).toContain(`signalbox ${command.name.split(' ')[0]}`)
      for (const spec of Object.values(command.options)) {
        if (spec.default !== undefined) expect(help).toContain(`default: ${spec.default})`)
      }
    }
  })

  it('`signalbox help <command>` prints the same help', async () => {
    const [viaHelp, viaFlag] = await Promise.all([runMain(['help', 'tools', 'serve']), runMain(['tools', 'serve', '-h'])])
    expect(viaHelp.code).toBe(0)
    expect(viaHelp.stdout).toContain('signalbox tools serve: host the tools a module exports')
    expect(viaHelp.stdout).toBe(viaFlag.stdout)
  })

  it('the bin, with no arguments, prints the overview listing every command', async () => {
    const bare = await runCli([])
    expect(bare.code).toBe(0)
    for (const command of COMMANDS) expect(bare.stdout).toContain(`  ${command.name}`)
  })

  it('the bin: an unknown command exits 2 with a clear error and the usage', async () => {
    const result = await runCli(['reveiw'])
    expect(result.code).toBe(2)
    expect(result.stderr).toContain('error [USAGE]: unknown command "reveiw" (did you mean "review"?)')
    expect(result.stderr).toContain('Usage: signalbox <command>')
    expect(result.stdout).toBe('')
  })

  it('an unknown flag exits 2 with the usage of the command', async () => {
    const result = await runMain(['watch', '--colour'])
    expect(result.code).toBe(2)
    expect(result.stderr).toContain('error [USAGE]: unknown flag --colour for "signalbox watch"')
    expect(result.stderr).toContain('Usage: signalbox watch [agent]')
  })

  it('a command that needs a bus and has none exits 1 with `error [NO_BUS]`', async () => {
    const result = await runMain(['steer', 'claw', 'stop', '--as', 'ops'])
    expect(result.code).toBe(1)
    expect(result.stderr.trim()).toBe('error [NO_BUS]: no bus: pass --nats nats://host:4222 or set SIGNALBOX_NATS_URL')
  })

  it('an unreachable server is a clear error, not a hang', async () => {
    const result = await runMain(['status', 'claw', '--nats', 'nats://127.0.0.1:1'])
    expect(result.code).toBe(1)
    expect(result.stderr.trim()).toBe(
      'error [BUS_CONNECT_FAILED]: could not reach NATS at nats://127.0.0.1:1: nothing listens on 127.0.0.1:1 (is nats-server running, with JetStream: -js?)',
    )
  })
})

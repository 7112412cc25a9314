/**
 * One spelling per flag across commands: who decides, steers or cancels is `--as` everywhere, the
 * message that asks for it names the flag the usage shows, and the spellings that shipped before
 * (`review --name`, `steer --from`, `cancel --from`) keep working as documented aliases.
 */
import { describe, expect, it } from 'vitest'
import { runMain } from '../../../test/support/cli-in-process.ts'
import { commandHelp, GLOBAL_OPTIONS } from '../src/cli.ts'
import { COMMANDS } from '../src/main.ts'

const noUser = { env: { USER: undefined } }
const command = (name: string) => COMMANDS.find((c) => c.name === name) as (typeof COMMANDS)[number]
/** Nothing listens there: a command that gets past its flags fails to connect, fast. */
const nowhere = ['--nats', 'nats://127.0.0.1:1']

describe('who is at the command line: --as', () => {
  it.each([
    ['review', []],
    ['steer', ['claw', 'stop']],
    ['cancel', ['claw']],
  ])('`%s` without $USER asks for --as NAME, the flag its usage shows', async (name, args) => {
    const refused = await runMain([name, ...args, ...nowhere], noUser)
    expect(refused.code, refused.output).toBe(2)
    expect(refused.stderr).toContain('$USER is not set and the audit records a real name: pass --as NAME')
    expect(refused.stderr).toContain(`Usage: signalbox ${command(name).usage}`)
    expect(command(name).usage).toContain('--as <name>')
  })

  it.each([
    ['review', [], '--as', 'tina'],
    ['review', [], '--name', 'tina'],
    ['steer', ['claw', 'stop'], '--as', 'ops'],
    ['steer', ['claw', 'stop'], '--from', 'ops'],
    ['cancel', ['claw'], '--as', 'ops'],
    ['cancel', ['claw'], '--from', 'ops'],
  ])('`%s %s %s NAME` is accepted (it goes on to connect)', async (name, args, flag, who) => {
    const named = await runMain([name, ...args, flag, who, ...nowhere], noUser)
    expect(named.stderr).not.toContain('USAGE')
    expect(named.stderr).toMatch(/BUS_CONNECT_FAILED|NATS_UNREACHABLE/)
  })

  it('an alias and the flag with two different names is a usage error', async () => {
    const both = await runMain(['review', '--as', 'tina', '--name', 'sam', ...nowhere])
    expect(both.code).toBe(2)
    expect(both.stderr).toContain('--name is another spelling of --as: pass one of them')
    // The same name twice is no contradiction.
    const same = await runMain(['steer', 'claw', 'stop', '--as', 'ops', '--from', 'ops', ...nowhere])
    expect(same.stderr).not.toContain('USAGE')
  })

  it('help documents the old spellings as aliases on the --as line', () => {
    expect(commandHelp(command('review'))).toMatch(/--as <name> .*\(alias: --name\)/)
    expect(commandHelp(command('steer'))).toMatch(/--as <name> .*\(alias: --from\)/)
    expect(commandHelp(command('cancel'))).toMatch(/--as <name> .*\(alias: --from\)/)
  })
})

describe('every command', () => {
  it('names in its usage and examples only flags it has under that name (no alias, nothing unknown)', () => {
    const problems: string[] = []
    for (const cmd of COMMANDS) {
      const aliases = new Set(Object.values(cmd.options).flatMap((spec) => spec.aliases ?? []))
      const known = new Set([...Object.keys(cmd.options), ...Object.keys(GLOBAL_OPTIONS)])
      for (const text of [cmd.usage, ...cmd.examples.map(([example]) => example)]) {
        for (const [, flag] of text.matchAll(/(?:^|\s|\[|\()--([a-z][a-z-]*)/g)) {
          if (aliases.has(flag as string)) problems.push(`${cmd.name}: alias --${flag} in "${text}"`)
          else if (!known.has(flag as string)) problems.push(`${cmd.name}: unknown --${flag} in "${text}"`)
        }
      }
    }
    expect(problems).toEqual([])
  })

  it('every command that records who acted spells it --as', () => {
    const who = COMMANDS.filter((cmd) =>
      Object.values(cmd.options).some((spec) => /who (you are|is steering|cancels|approves|decides)/.test(spec.description)),
    )
    expect(who.map((cmd) => cmd.name).sort()).toEqual(['cancel', 'console', 'review', 'run', 'steer'])
    for (const cmd of who) expect(Object.keys(cmd.options), cmd.name).toContain('as')
  })
})

/** The command framework, help, errors and output helpers, in this process (no bus). */
import { DEFAULT_APPROVAL_CLOCK_SKEW_MS, TOOL_QUEUE_GROUP } from '@signalbox/actors/internal'
import { ConfigError, SignalboxError } from '@signalbox/core'
import { DEFAULT_SUBJECT_PREFIX } from '@signalbox/core/bus'
import { describe, expect, it } from 'vitest'
import { runMain } from '../../../test/support/cli-in-process.ts'
import { agentModuleProblems, defineAgentModule } from '../src/agent-module.ts'
import { CliError, commandHelp, DEFAULT_PREFIX, UsageError } from '../src/cli.ts'
import { DEFAULT_CLOCK_SKEW_MS, DEFAULT_TOOL_QUEUE } from '../src/commands/tools-serve.ts'
import { COMMANDS, formatError } from '../src/main.ts'
import { colorsEnabled, createColorizer, describeEvent, formatElapsed, shortId } from '../src/output.ts'

describe('help', () => {
  it('`help <command>` and `<command> --help` print the same text, with every flag, its default and examples', async () => {
    for (const command of COMMANDS) {
      const words = command.name.split(' ')
      const [viaHelp, viaFlag, viaShort] = await Promise.all([
        runMain(['help', ...words]),
        runMain([...words, '--help']),
        runMain([...words, '-h']),
      ])
      expect(viaHelp.code).toBe(0)
      expect(viaFlag.code).toBe(0)
      expect(viaFlag.stdout).toBe(viaHelp.stdout)
      expect(viaShort.stdout).toBe(viaHelp.stdout)
      expect(viaHelp.stdout).toBe(`${commandHelp(command)}\n`)
      for (const [name, spec] of Object.entries(command.options)) {
        expect(viaHelp.stdout).toContain(`--${name}`)
        if (spec.choices) expect(viaHelp.stdout).toContain(spec.choices.join(' | '))
      }
      expect(command.examples.length).toBeGreaterThan(0)
      for (const [example] of command.examples) expect(viaHelp.stdout).toContain(example)
    }
  })

  it('--help wins over missing arguments', async () => {
    const result = await runMain(['steer', '--help'])
    expect(result.code).toBe(0)
    expect(result.stdout).toContain('signalbox steer: send a correction')
  })

  it('help for an unknown command is a usage error', async () => {
    const result = await runMain(['help', 'frobnicate'])
    expect(result.code).toBe(2)
    expect(result.stderr).toContain('error [USAGE]: no such command "frobnicate"')
  })

  it('keeps the defaults it shows in step with the packages', () => {
    expect(DEFAULT_PREFIX).toBe(DEFAULT_SUBJECT_PREFIX)
    expect(DEFAULT_TOOL_QUEUE).toBe(TOOL_QUEUE_GROUP)
    expect(DEFAULT_CLOCK_SKEW_MS).toBe(DEFAULT_APPROVAL_CLOCK_SKEW_MS)
  })
})

describe('usage errors exit 2 with the usage of the command', () => {
  const cases: [string[], string][] = [
    [['watch', '--colour'], 'unknown flag --colour for "signalbox watch"'],
    [['review', '--auto', 'maybe'], '--auto must be one of approve, deny (got "maybe")'],
    [['audit', '--kind', 'approval.maybe'], '--kind must be one of approval.granted, approval.denied'],
    [['steer', 'claw'], 'missing <text...>'],
    [['status'], 'missing <agent>'],
    [['status', 'claw', 'extra'], 'unexpected argument "extra"'],
    [['watch', '--nats'], "flag '--nats <value>' argument missing"],
    [['tools'], 'tools needs a sub-command: signalbox tools serve <module>'],
    [['tools', 'host'], 'no such command "tools host" (did you mean "tools serve"?)'],
    [['--nats', 'x'], 'a command comes first (got the flag "--nats")'],
    [['stear', 'x'], 'unknown command "stear" (did you mean "steer"?)'],
  ]
  for (const [argv, message] of cases) {
    it(argv.join(' '), async () => {
      const result = await runMain(argv)
      expect(result.code).toBe(2)
      expect(result.stderr).toContain(`error [USAGE]: ${message}`)
      expect(result.stderr).toMatch(/Usage: signalbox /)
      expect(result.stdout).toBe('')
    })
  }
})

describe('errors', () => {
  it('prints `error [CODE]: message` for signalbox errors, UNEXPECTED otherwise', () => {
    expect(formatError(new ConfigError('bad'))).toBe('error [CONFIG_INVALID]: bad')
    expect(formatError(new SignalboxError('BUS_TIMEOUT', 'slow', { cause: new Error('inner') }))).toBe(
      'error [BUS_TIMEOUT]: slow (inner)',
    )
    expect(formatError(new Error('boom'))).toBe('error [UNEXPECTED]: boom')
  })

  it("the command's own errors are SignalboxErrors (the person at the command line acts)", () => {
    expect(SignalboxError.is(new UsageError('no'), 'USAGE')).toBe(true)
    expect(new CliError('NO_BUS', 'no bus')).toMatchObject({ name: 'CliError', code: 'NO_BUS', fault: 'user' })
    expect(UsageError.is(new CliError('NO_BUS', 'no bus'))).toBe(false)
  })

  it('a missing module is a clear error, exit 1', async () => {
    const result = await runMain(['tools', 'serve', 'nowhere/tools.ts', '--nats', 'nats://127.0.0.1:4222'])
    expect(result.code).toBe(1)
    expect(result.stderr).toMatch(/^error \[MODULE_NOT_FOUND\]: no such module: nowhere\/tools\.ts/)
  })

  it('a tools module without tools is rejected before connecting', async () => {
    const result = await runMain(['tools', 'serve', 'packages/cli/test/fixtures/no-tools.ts', '--nats', 'nats://127.0.0.1:4222'])
    expect(result.code).toBe(1)
    expect(result.stderr).toContain('error [MODULE_INVALID]: packages/cli/test/fixtures/no-tools.ts exports no tools')
  })
})

describe('agent modules', () => {
  it('defineAgentModule returns a valid definition and rejects an invalid one with every problem', () => {
    const ok = defineAgentModule({ id: 'claw', instructions: 'x', remoteTools: ['a'], script: { m: [{ content: 'hi' }] } })
    expect(ok.id).toBe('claw')
    expect(() => defineAgentModule({ id: 'bad id', instructions: '', maxTurns: 0 } as never)).toThrow(
      /id must be 1-64 letters[\s\S]*instructions must be a non-empty string[\s\S]*maxTurns must be a positive number/,
    )
    expect(agentModuleProblems({ id: 'a', instructions: 'x', tools: [{ name: 'half' }] })).toEqual([
      'tools[0] is not a tool: missing description, parameters, validate, execute (use tool({ ... }) from @signalbox/core)',
    ])
    expect(agentModuleProblems({ id: 'a', instructions: 'x', script: { m: [] }, model: 'other' })).toEqual([
      'model "other" has no script (scripts: m)',
    ])
  })
})

describe('output', () => {
  it('colours only on a terminal, never with NO_COLOR, always with FORCE_COLOR', () => {
    expect(colorsEnabled({}, { isTTY: true })).toBe(true)
    expect(colorsEnabled({}, { isTTY: false })).toBe(false)
    expect(colorsEnabled({ NO_COLOR: '1' }, { isTTY: true })).toBe(false)
    expect(colorsEnabled({ FORCE_COLOR: '1' }, { isTTY: false })).toBe(true)
    expect(colorsEnabled({ TERM: 'dumb' }, { isTTY: true })).toBe(false)
  })

  it('short ids, durations', () => {
    expect(shortId('run_3f2a9c1e-1442-4fcf-a815-376570538465')).toBe('run_3f2a9c1e')
    expect(shortId('run_gate_1')).toBe('run_gate_1')
    expect(formatElapsed(12)).toBe('12 ms')
    expect(formatElapsed(1_540)).toBe('1.5 s')
    expect(formatElapsed(59_600)).toBe('1 min 0 s')
    expect(formatElapsed(119_999)).toBe('2 min 0 s')
  })

  it('a run.end that hands the conversation over says to whom (run, watch)', () => {
    const end = {
      type: 'run.end',
      at: 0,
      agentId: 'front',
      runId: 'run_1',
      runPath: [],
      status: 'done',
      output: '',
      turns: 1,
      usage: { promptTokens: 1, completionTokens: 1, totalTokens: 2 },
    } as const
    const c = createColorizer(false)
    expect(describeEvent({ ...end, handoff: { to: 'billing', reason: 'a refund' } } as never, c).detail).toBe(
      'done · 1 turn · 2 tokens · handed off to billing ("a refund")',
    )
    expect(describeEvent(end as never, c).detail).toBe('done · 1 turn · 2 tokens')
  })
})

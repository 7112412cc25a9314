import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import {
  createAgent,
  type Instrumentation,
  type InstrumentedWork,
  policyReviewer,
  type Tool,
  tool,
  type ValidationResult,
} from '../../src/index.ts'
import { ScriptedProvider } from '../../src/testing/index.ts'

const pay = tool({
  name: 'pay',
  description: 'Pays.',
  schema: z.object({ amount: z.number() }),
  needsApproval: true,
  execute: ({ amount }) => `paid ${amount}`,
})

/** A tool written as a class: its methods live on the prototype. */
class Echo implements Tool<{ text: string }> {
  readonly name = 'echo'
  readonly description = 'Echoes.'
  readonly parameters = { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] }
  readonly prefix = 'echo: '
  validate(args: unknown): ValidationResult<{ text: string }> {
    const text = (args as { text?: unknown })?.text
    return typeof text === 'string' ? { ok: true, value: { text } } : { ok: false, issues: ['text must be a string'] }
  }
  execute(args: { text: string }): string {
    return `${this.prefix}${args.text}`
  }
}

function twoCalls() {
  return new ScriptedProvider({
    model: 'm',
    script: [
      {
        toolCalls: [
          { name: 'pay', arguments: { amount: 5 } },
          { name: 'echo', arguments: { text: 'hi' } },
        ],
      },
      { content: 'done' },
    ],
  })
}

function recorder() {
  const seen: string[] = []
  const instrumentation: Instrumentation = {
    around<T>(work: InstrumentedWork, run: () => T): T {
      const label =
        work.kind === 'hook'
          ? `hook ${work.point} ${work.name ?? '-'} #${work.index}`
          : work.kind === 'tool'
            ? `tool ${work.toolName} ${work.context.callId}`
            : work.kind === 'review'
              ? `review ${work.request.toolName}`
              : `resume ${work.runId}`
      seen.push(`> ${label}`)
      const result = run()
      seen.push(`< ${label}`)
      return result
    },
  }
  return { seen, instrumentation }
}

describe('agent.instrument', () => {
  it('runs every tool, hook and review inside the instrumentation, results unchanged', async () => {
    const agent = createAgent({
      provider: twoCalls(),
      tools: [pay, new Echo()],
      reviewer: policyReviewer(() => true),
      hooks: [
        {
          afterToolExecution: function shout({ output }) {
            return output.toUpperCase()
          },
        },
      ],
    })
    const { seen, instrumentation } = recorder()
    agent.instrument(instrumentation)
    const result = await agent.run('go')
    expect(result.output).toBe('done')
    const toolResults = result.messages.filter((m) => m.role === 'tool').map((m) => m.content)
    // The class tool kept its prototype (`this.prefix`), and the hook's rewrite went through.
    expect(toolResults).toEqual(['PAID 5', 'ECHO: HI'])
    const [payCall, echoCall] = result.messages.flatMap((m) => (m.role === 'assistant' ? (m.tool_calls ?? []) : []))
    expect(seen.filter((s) => s.startsWith('>'))).toEqual([
      '> review pay',
      `> tool pay ${payCall?.id}`,
      '> hook afterToolExecution shout #0',
      `> tool echo ${echoCall?.id}`,
      '> hook afterToolExecution shout #0',
    ])
  })

  it('stops wrapping once detached, and wraps nothing when none is attached', async () => {
    const agent = createAgent({ provider: twoCalls(), tools: [pay, new Echo()], reviewer: policyReviewer(() => true) })
    const { seen, instrumentation } = recorder()
    const detach = agent.instrument(instrumentation)
    detach()
    await agent.run('go')
    expect(seen).toEqual([])
  })

  it('passes a tool’s rejection through unchanged (the run reads it as the tool’s error)', async () => {
    const failing = tool({
      name: 'pay',
      description: 'Fails.',
      schema: z.object({ amount: z.number() }),
      execute: async () => {
        throw new Error('card declined')
      },
    })
    const agent = createAgent({
      provider: new ScriptedProvider({
        model: 'm',
        script: [{ toolCalls: [{ name: 'pay', arguments: { amount: 1 } }] }, { content: 'ok' }],
      }),
      tools: [failing],
    })
    agent.instrument(recorder().instrumentation)
    const result = await agent.run('go')
    expect(result.messages.find((m) => m.role === 'tool')?.content).toContain('card declined')
  })

  it('refuses something that is not an instrumentation', () => {
    const agent = createAgent({ provider: twoCalls() })
    expect(() => agent.instrument({} as Instrumentation)).toThrow(/around\(work, run\)/)
  })
})

import type { AgentMachine } from '@signalbox/core'
import { type Provider, ProviderError } from '@signalbox/core'
import { type Command, EXIT } from '../cli.ts'

/** The agent machine, built with a provider that is never called: the graph needs only its definition. */
export async function agentMachineForGraph(): Promise<AgentMachine> {
  const { createAgent } = await import('@signalbox/core')
  const provider: Provider = {
    model: 'none',
    complete: async () => {
      throw new ProviderError('signalbox graph never calls the model', { retryable: false })
    },
  }
  return createAgent({ id: 'agent', provider }).machine
}

export const graph: Command = {
  name: 'graph',
  summary: "print the agent machine's statechart (Mermaid)",
  usage: 'graph [--markdown] [--direction TB|LR] [--brief]',
  description: [
    "Prints the agent machine's statechart as Mermaid stateDiagram-v2, generated from the machine",
    'definition itself: every state with its description, every transition with its event and guard.',
    'Hook points are marked [hook point] and styled; waits (model, tool, reviewer) are marked too.',
    'Works offline: paste it in a Markdown file (GitHub renders it), or any Mermaid renderer.',
  ].join('\n'),
  options: {
    markdown: { type: 'boolean', description: 'wrap it in a ```mermaid fence, ready for a Markdown file' },
    direction: { type: 'string', valueName: '<dir>', description: 'layout direction', default: 'TB', choices: ['TB', 'LR'] },
    brief: { type: 'boolean', description: 'state names and tags only, without descriptions and guards' },
  },
  bus: 'none',
  maxArgs: 0,
  examples: [
    ['signalbox graph', 'the statechart, as Mermaid'],
    ['signalbox graph --markdown > docs/agent-machine.md', 'a Markdown file that renders the chart'],
  ],
  async run(context) {
    const brief = context.values.brief === true
    const { statechartToMermaid } = await import('@signalbox/actors/inspect')
    const text = statechartToMermaid(await agentMachineForGraph(), {
      direction: context.values.direction === 'LR' ? 'LR' : 'TB',
      descriptions: !brief,
      guards: !brief,
    })
    if (context.global.json) {
      context.out(JSON.stringify({ format: 'mermaid', diagram: text }))
      return EXIT.ok
    }
    const body = context.values.markdown ? `\`\`\`mermaid\n${text}\`\`\`\n` : text
    context.io.stdout.write(body)
    return EXIT.ok
  },
}

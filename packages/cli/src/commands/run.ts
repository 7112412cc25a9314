import type { Command } from '../cli.ts'
import { OTLP_OPTIONS } from '../tracing.ts'
import { TRUST_OPTIONS } from '../trust-flags.ts'
import { RUN_INSPECT_OPTIONS } from './inspect.ts'

export const run: Command = {
  name: 'run',
  summary: 'run an agent defined in a module, embedded or over NATS',
  usage: 'run <module> [input...] [--nats <url>] [--base-url <url>] [--model <name>] [--api-key <key>] [--scripted] [flags]',
  description: [
    'Runs the agent a module default-exports (defineAgentModule from @signalbox/cli) once, on the',
    "input given (or the module's `input`), against an OpenAI-compatible endpoint, and prints a",
    "readable trace: the machine's states, the events, the decisions and the final answer.",
    'Embedded (no --nats): everything in this process; approvals and questions are asked at this',
    'terminal (denied / unanswered when there is none, or decided by --auto / --answer).',
    'With --nats: approvals and questions go to reviewers on the bus (signalbox review), remote',
    'tools to tool hosts (signalbox tools serve), events and steering over the bus (signalbox watch,',
    'signalbox steer), decisions to the audit stream (signalbox audit).',
    'With --trust FILE (a JSON trust policy, docs/security.md) a decision, answer, correction or cancel',
    'is applied only when signed by a key the policy allows (per tool for decisions); anything else is',
    'rejected, audited (approval.rejected, question.rejected) and the request stays pending. With',
    '--signing-key FILE (an nkey seed) the approval requests and audit entries are signed, and that key',
    'may never approve its own calls (check the trail with signalbox audit --verify). Both are for runs',
    'on a bus: embedded, the flags are refused and $SIGNALBOX_TRUST / $SIGNALBOX_SIGNING_KEY are not',
    'used (a warning says so): the reviewer is this terminal.',
    "--scripted plays the module's scripted conversation on a local scripted model server (offline).",
    'Exit code: 0 done, 1 failed, 130 cancelled (Ctrl-C or signalbox cancel).',
  ].join('\n'),
  args: [
    ['<module>', 'path to the agent module (.ts or .js)'],
    ['[input...]', "the user's message (default: the module's `input`)"],
  ],
  options: {
    ...RUN_INSPECT_OPTIONS,
    'base-url': {
      type: 'string',
      valueName: '<url>',
      description: 'OpenAI-compatible endpoint',
      default: '$OPENAI_BASE_URL, else https://api.openai.com/v1',
    },
    model: {
      type: 'string',
      valueName: '<name>',
      description: 'model name',
      default: "$SIGNALBOX_MODEL; with --scripted the module's scripted model",
    },
    'api-key': { type: 'string', valueName: '<key>', description: 'API key', default: '$OPENAI_API_KEY' },
    scripted: { type: 'boolean', description: "play the module's `script` on a local scripted model server (offline)" },
    as: {
      type: 'string',
      valueName: '<name>',
      description: 'embedded, at a terminal: who approves and answers (recorded in the audit); required when $USER is not set',
      default: '$USER',
    },
    auto: {
      type: 'string',
      valueName: '<verdict>',
      description: 'embedded only: decide approvals without asking',
      choices: ['approve', 'deny'],
    },
    answer: { type: 'string', valueName: '<text>', description: 'embedded only: answer every question with this text' },
    'approval-timeout': {
      type: 'string',
      valueName: '<ms>',
      description: 'how long reviewers have before a call is denied',
      default: "the module's approvalTimeoutMs, else 300000",
    },
    'wait-tools': {
      type: 'string',
      valueName: '<ms>',
      description: 'how long to wait for tool hosts of remote tools',
      default: '10000',
    },
    ...TRUST_OPTIONS,
    ...OTLP_OPTIONS,
    'run-id': {
      type: 'string',
      valueName: '<id>',
      description: 'the run id (for steer --run, cancel --run)',
      default: 'run_<uuid>',
    },
  },
  bus: 'optional',
  minArgs: 1,
  examples: [
    [
      'signalbox run examples/distributed/claw-agent.ts --scripted',
      'embedded and offline: you approve the drop at this terminal',
    ],
    [
      'signalbox run ./agent.ts "Refund order 42" --nats nats://127.0.0.1:4222 --model llama3.1 --base-url http://localhost:11434/v1',
      'a real model; reviewers and tools on NATS',
    ],
    [
      'signalbox run ./agent.ts --nats nats://127.0.0.1:4222 --trust trust.json --signing-key agent.nk',
      'only the keys in trust.json may approve; requests and audit signed by the agent',
    ],
  ],
  run: async (context) => (await import('../run-agent.ts')).runAgent(context),
}

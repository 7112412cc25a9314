/**
 * The claw machine, with a person in the loop.
 *
 *   tsx examples/claw/demo.ts          you are Tina: answer the agent's question, approve or deny the drop
 *   tsx examples/claw/demo.ts --auto   unattended: plays the five scenarios (approve, deny, timeout,
 *                                      steer, question) with a scripted Tina
 *   tsx examples/claw/demo.ts --console  you are Tina, in the browser: the signalbox console
 *                                      (--as NAME, --port PORT, --contents)
 *
 * Offline by default (the scripted model server, over HTTP, through the real OpenAIProvider). With
 * SIGNALBOX_MODEL set (and OPENAI_BASE_URL, OPENAI_API_KEY) it talks to that endpoint instead, unless
 * --scripted is passed.
 */
import {
  type Agent,
  type Answerer,
  functionAnswerer,
  MemoryAuditLog,
  policyReviewer,
  type Reviewer,
  ScriptedAnswerer,
  ScriptedReviewer,
  terminalAnswerer,
  terminalReviewer,
} from '@signalbox/core'
import { demoArgs } from '../shared/demo-args.ts'
import { type DemoModel, openDemoModel, useRealEndpoint } from '../shared/model.ts'
import { createTrace, exitQuietlyOnBrokenPipe, type Trace } from '../shared/trace.ts'
import { ClawMachine, createClawAgent } from './agent.ts'
import { playInConsole } from './console-demo.ts'
import {
  ANSWER,
  type ClawScenario,
  clawScenarios,
  clawScripts,
  INTERACTIVE_MODEL,
  INTERACTIVE_PROMPT,
  interactiveClaw,
  tinaWatches,
} from './script.ts'

exitQuietlyOnBrokenPipe()
const argv = process.argv.slice(2)
const flags = demoArgs(
  [
    'tsx examples/claw/demo.ts [--auto | --console [--as <name>] [--port <port>] [--contents]] [--scripted]',
    '',
    "The claw machine, with a person in the loop: you are Tina. Answer the agent's question, then",
    'approve or deny the drop (it waits 60 s for your yes). Needs a terminal.',
    '  --auto      unattended: plays five scenarios (approve, deny, timeout, steer, question)',
    '  --console   you are Tina in the browser: the signalbox console (--as, --port, --contents)',
  ],
  {
    auto: { type: 'boolean' },
    console: { type: 'boolean' },
    as: { type: 'string' },
    port: { type: 'string' },
    contents: { type: 'boolean' },
  },
  argv,
)
const auto = flags.auto === true
const inConsole = flags.console === true
const playScenarios = auto && !inConsole && !useRealEndpoint(argv)
if (!auto && !inConsole && !process.stdin.isTTY) {
  // The terminal prompts need a person at a keyboard; piped or closed stdin would wait for nobody.
  console.error('stdin is not a terminal: run this demo in a terminal, or pass --auto to run it unattended.')
  process.exit(2)
}
const model = await openDemoModel({ scripts: playScenarios ? clawScripts : { [INTERACTIVE_MODEL]: interactiveClaw }, argv })
let failed = false

try {
  if (inConsole) {
    const stop = new AbortController()
    process.once('SIGINT', () => stop.abort())
    process.once('SIGTERM', () => stop.abort())
    failed ||= !(await playInConsole(model, argv, stop.signal))
  } else if (playScenarios) {
    const scenarios = Object.values(clawScenarios)
    for (const [index, scenario] of scenarios.entries()) {
      const ok = await playScenario(model, scenario, `${index + 1}/${scenarios.length}`)
      failed ||= !ok
    }
  } else {
    const trace = createTrace()
    // Unattended against a real model: Tina says yes to everything and always wants the polar bear.
    const reviewer: Reviewer = auto ? policyReviewer(() => true, { name: 'auto-yes' }) : terminalReviewer({ name: 'tina' })
    const answerer: Answerer = auto ? functionAnswerer(() => ANSWER, { name: 'auto' }) : terminalAnswerer({ name: 'tina' })
    header(trace, `claw machine: you are Tina (${auto ? 'auto' : 'interactive'})`, model.describe(INTERACTIVE_MODEL))
    if (!auto)
      trace.line(
        trace.c.dim('The agent may ask you which prize you mean, and waits for your yes before it drops the claw (60s).'),
      )
    const ok = await playRun(trace, {
      agent: createClawAgent({
        provider: model.provider(INTERACTIVE_MODEL),
        reviewer,
        answerer,
        approvalTimeoutMs: 60_000,
        questionTimeoutMs: 120_000,
        audit: new MemoryAuditLog(),
      }),
      prompt: INTERACTIVE_PROMPT,
    })
    failed ||= !ok
  }
  model.assertDone()
} catch (error) {
  console.error(error instanceof Error ? error.message : error)
  failed = true
} finally {
  await model.close()
}
if (failed) process.exitCode = 1

async function playScenario(model: DemoModel, scenario: ClawScenario, position: string): Promise<boolean> {
  const trace = createTrace()
  header(trace, `claw machine ${position} · ${scenario.title}`, model.describe(scenario.model))
  const machine = new ClawMachine()
  const agent = createClawAgent({
    provider: model.provider(scenario.model),
    reviewer: new ScriptedReviewer(scenario.verdicts, { name: 'tina' }),
    answerer: new ScriptedAnswerer(scenario.answers, { name: 'tina' }),
    machine,
    // Real time, kept short so the timeout scenario does not keep you waiting.
    approvalTimeoutMs: 1_000,
  })
  if (scenario.steer) {
    trace.line(
      trace.c.dim(`Tina will shout ${JSON.stringify(scenario.steer.text)} once she sees ${scenario.steer.afterTool} end.`),
    )
    tinaWatches(agent, scenario.steer)
  }
  const ok = await playRun(trace, { agent, prompt: scenario.prompt })
  const won = machine.drops.map((d) => d.won ?? 'nothing').join(', ') || 'no drop'
  trace.line(trace.c.dim(`machine: claw over the ${machine.position} · coins left ${machine.coins} · won: ${won}`))
  return ok
}

async function playRun(trace: Trace, run: { agent: Agent; prompt: string }): Promise<boolean> {
  const { agent } = run
  trace.events(agent)
  const startedAt = Date.now()
  const handle = agent.start(run.prompt)
  trace.states(handle)
  try {
    const result = await handle.result
    trace.result(result, startedAt)
    return true
  } catch (error) {
    trace.failure(error)
    return false
  } finally {
    printAudit(trace, agent)
  }
}

function printAudit(trace: Trace, agent: Agent): void {
  const entries = agent.audit instanceof MemoryAuditLog ? agent.audit.entries : []
  if (entries.length === 0) return
  trace.line(trace.c.bold('Audit'))
  for (const entry of entries) {
    const reason = entry.reason ? ` (${entry.reason})` : ''
    const latency = entry.latencyMs === undefined ? '' : ` · ${entry.latencyMs} ms`
    trace.line(`  ${entry.kind.padEnd(18)} ${entry.toolName ?? ''} · ${entry.actor}: ${entry.decision ?? ''}${reason}${latency}`)
  }
}

function header(trace: Trace, title: string, modelLine: string): void {
  const { c } = trace
  trace.line()
  trace.line(c.bold(`signalbox · ${title}`))
  trace.line(`${c.dim('model   ')} ${modelLine}`)
  trace.line(`${c.dim('legend  ')} ${c.cyan('state')} where the machine is · the rest are events`)
  trace.line()
}

/**
 * Hand-off: `tsx examples/handoff/demo.ts`. Triage reads the person's message and hands the
 * conversation to billing (`handoffTool`); billing looks the charge up and answers. An
 * `AgentSystem` runs both agents and follows the hand-off; the result says who finished.
 *
 * Offline by default (the scripted model server over HTTP, the real OpenAIProvider); with
 * SIGNALBOX_MODEL set, both agents use that endpoint unless --scripted is passed.
 */
import { createAgentSystem } from '@signalbox/actors/system'
import type { Agent } from '@signalbox/core'
import { demoArgs } from '../shared/demo-args.ts'
import { openDemoModel } from '../shared/model.ts'
import { exitQuietlyOnBrokenPipe } from '../shared/trace.ts'
import { createBillingAgent, createTriageAgent } from './agents.ts'
import { BILLING_MODEL, billingScript, HANDOFF_PROMPT, TRIAGE_MODEL, triageScript } from './script.ts'

exitQuietlyOnBrokenPipe()
demoArgs([
  'tsx examples/handoff/demo.ts [--scripted]',
  '',
  'Hand-off: triage reads the message and hands the conversation to billing, which answers; an',
  'AgentSystem runs both agents and follows the hand-off.',
])
const out = (line = '') => process.stdout.write(`${line}\n`)
const model = await openDemoModel({ scripts: { [TRIAGE_MODEL]: triageScript, [BILLING_MODEL]: billingScript } })

/** One line per tool call and run end, prefixed with the agent. */
function trace(agent: Agent): void {
  const who = agent.id.padEnd(8)
  agent.on('run.start', (e) => out(`${who} run.start   ${JSON.stringify(e.input)}`))
  agent.on('tool.end', (e) => out(`${who} tool.end    ${e.toolName} · ${e.outcome} · ${e.output}`))
  agent.on('run.end', (e) =>
    out(`${who} run.end     ${e.status}${e.output ? ` · ${JSON.stringify(e.output)}` : ' (handed over)'}`),
  )
}

try {
  out('signalbox · hand-off: triage passes the conversation to billing')
  out(`model    ${model.describe(TRIAGE_MODEL)}`)
  out()
  const triage = createTriageAgent(model.provider(TRIAGE_MODEL))
  const billing = createBillingAgent(model.provider(BILLING_MODEL))
  trace(triage)
  trace(billing)
  const system = createAgentSystem({ hostId: 'handoff-demo' }).add(triage).add(billing)

  const result = await system.run('triage', HANDOFF_PROMPT)
  out()
  out('Final answer')
  out(`  ${result.output}`)
  out(`✔ ${result.status} · started at ${result.agentId} · answered by ${result.finishedBy} · via ${result.handoffs.join(' → ')}`)
  model.assertDone()
} catch (error) {
  console.error(error instanceof Error ? error.message : error)
  process.exitCode = 1
} finally {
  await model.close()
}

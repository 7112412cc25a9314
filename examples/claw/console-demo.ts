/**
 * The claw scenario played from the browser: the agent and the console share one in-process bus,
 * so the console reaches the agent exactly as it would over NATS (approvals, questions, corrections,
 * cancels, events, machine states, audit). When a round ends, a new one starts with a fresh coin.
 */
import { startConsole } from '@signalbox/console'
import { InProcessBus } from '@signalbox/core/bus'
import type { DemoModel } from '../shared/model.ts'
import { createTrace } from '../shared/trace.ts'
import { clawOnBus } from './on-bus.ts'
import { INTERACTIVE_MODEL, INTERACTIVE_PROMPT } from './script.ts'

export async function playInConsole(model: DemoModel, argv: string[], signal: AbortSignal): Promise<boolean> {
  const flag = (name: string) => {
    const index = argv.indexOf(name)
    return index >= 0 ? argv[index + 1] : undefined
  }
  const trace = createTrace()
  const { c } = trace
  const bus = new InProcessBus({ name: 'claw-demo' })
  const opened = await startConsole({
    bus,
    reviewer: flag('--as') ?? 'tina',
    port: Number(flag('--port') ?? 4300),
    includeContents: argv.includes('--contents'),
  })
  await opened.ready
  trace.line()
  trace.line(c.bold('signalbox · claw machine, played from the console'))
  trace.line(`${c.dim('model   ')} ${model.describe(INTERACTIVE_MODEL)}`)
  trace.line(`${c.dim('console ')} ${c.bold(opened.url)}  ${c.dim(`(reviewing as ${opened.hub.reviewer}; Ctrl-C to stop)`)}`)
  trace.line(c.dim('Answer the agent’s question, approve or deny the drop, steer or cancel the run: all in the browser.'))
  let ok = true
  try {
    for (let round = 1; !signal.aborted; round++) {
      const claw = clawOnBus({
        bus,
        provider: model.provider(INTERACTIVE_MODEL),
        approvalTimeoutMs: 120_000,
        questionTimeoutMs: 300_000,
      })
      await claw.ready
      const handle = claw.agent.start(INTERACTIVE_PROMPT)
      trace.line(`${c.cyan(`round ${round}`)} ${c.dim(`run ${handle.runId}:`)} "${INTERACTIVE_PROMPT}"`)
      const stop = () => handle.cancel('the demo is stopping')
      signal.addEventListener('abort', stop, { once: true })
      try {
        const result = await handle.result
        trace.line(`  ${c.green('done')}: ${result.output ?? ''}`)
      } catch (error) {
        if (!signal.aborted) trace.line(`  ${c.red('ended')}: ${error instanceof Error ? error.message : String(error)}`)
        ok = signal.aborted
      } finally {
        signal.removeEventListener('abort', stop)
        claw.close()
      }
      const won = claw.machine.drops.map((d) => d.won ?? 'nothing').join(', ') || 'no drop'
      trace.line(c.dim(`  machine: claw over the ${claw.machine.position} · coins left ${claw.machine.coins} · won: ${won}`))
      if (!signal.aborted) await new Promise((resolve) => setTimeout(resolve, 1_500))
    }
  } finally {
    await opened.close()
    await bus.close()
  }
  return ok
}

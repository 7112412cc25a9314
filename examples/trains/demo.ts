/**
 * `pnpm demo`: the trains scenario, offline by default. The agent talks to the scripted model
 * server over HTTP through the real `OpenAIProvider`; set SIGNALBOX_MODEL (and OPENAI_BASE_URL,
 * OPENAI_API_KEY) to use a real endpoint instead, or pass --scripted to force the scripted one.
 */
import { demoArgs } from '../shared/demo-args.ts'
import { openDemoModel } from '../shared/model.ts'
import { createTrace, exitQuietlyOnBrokenPipe } from '../shared/trace.ts'
import { createTrainsAgent, firstClassPolicy, maskIds } from './agent.ts'
import { TRAINS_MODEL, TRAINS_PROMPT, trainsScript } from './script.ts'

exitQuietlyOnBrokenPipe()
demoArgs([
  'tsx examples/trains/demo.ts [--scripted]   (pnpm demo)',
  '',
  'The trains scenario: an agent books a seat; a beforeToolExecution hook refuses first class and',
  'an afterToolExecution hook masks ID numbers. A coloured trace shows the states, the hooks and',
  'the events.',
])
const trace = createTrace()
const { c } = trace
const model = await openDemoModel({ scripts: { [TRAINS_MODEL]: trainsScript } })

try {
  trace.line(c.bold('signalbox · trains: hooks change the loop, events only watch it'))
  trace.line(`${c.dim('model   ')} ${model.describe(TRAINS_MODEL)}`)
  trace.line(`${c.dim('hooks   ')} firstClassPolicy @ beforeToolExecution, maskIds @ afterToolExecution`)
  trace.line(
    `${c.dim('legend  ')} ${c.cyan('state')} where the machine is · ${c.magenta('hook')} your code deciding · the rest are events`,
  )
  trace.line()

  const agent = createTrainsAgent({
    provider: model.provider(TRAINS_MODEL),
    hooks: trace.hooks([firstClassPolicy(), maskIds()]),
    onInternalError: (error, where) => console.error(`${where} failed:`, error),
  })
  trace.events(agent)

  const startedAt = Date.now()
  const handle = agent.start(TRAINS_PROMPT)
  trace.states(handle)
  const result = await handle.result
  trace.result(result, startedAt)
  model.assertDone()
} catch (error) {
  trace.failure(error)
  process.exitCode = 1
} finally {
  await model.close()
}

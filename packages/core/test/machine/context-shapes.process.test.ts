import { execFile } from 'node:child_process'
import path from 'node:path'
import { promisify } from 'node:util'
import { expect, it } from 'vitest'

// A context with a getter written in its literal is a dictionary-mode object on Node 20 (~0.6 µs
// to make, slow to read): what every hook, tool and model call is handed must not be one. An event
// made by spreading a small object of the run's fields first got a hidden class of its own, event
// after event (a '*' listener: 97 µs a step, 37 with one literal per shape).
// A run's actor scope, its executor pinned, must stay fast too: redefining its property as an
// accessor made it a dictionary (1 KiB more a run).
it('every context a run hands out (five hooks, the tool, the provider), every event it emits and its actor scope have fast properties and one hidden class per kind', async () => {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['--allow-natives-syntax', '--import', 'tsx', path.join(import.meta.dirname, 'fixtures', 'context-shapes.ts')],
    { cwd: import.meta.dirname },
  )
  const { status, shapes } = JSON.parse(stdout.trim().split('\n').at(-1) as string)
  // Three runs of three tool steps: two started together (their scopes kept), then one more.
  expect(status).toBe('done')
  const each = { fast: true, oneHiddenClass: true }
  expect(shapes).toEqual({
    actorScope: { count: 2, ...each },
    beforeTurn: { count: 12, ...each },
    beforeProviderCall: { count: 12, ...each },
    callOptions: { count: 12, ...each },
    beforeToolExecution: { count: 9, ...each },
    toolContext: { count: 9, ...each },
    afterToolExecution: { count: 9, ...each },
    afterTurn: { count: 12, ...each },
    'event run.start': { count: 3, ...each },
    'event turn.start': { count: 12, ...each },
    'event model.request': { count: 12, ...each },
    'event model.response': { count: 12, ...each },
    'event tool.start': { count: 9, ...each },
    'event tool.end': { count: 9, ...each },
    'event turn.end': { count: 12, ...each },
    'event run.end': { count: 3, ...each },
  })
}, 60_000)

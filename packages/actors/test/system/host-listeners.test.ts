/**
 * A host serving many remote runs at once adds no listener per run to its own long-lived signal
 * (Node warns past 10 on one AbortSignal: `MaxListenersExceededWarning`, a leak in a host that
 * runs for weeks). Thirty children held open on one host, then the host closes: every run stops.
 */
import { createAgentSystem } from '@signalbox/actors/system'
import { tool } from '@signalbox/core'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { deploy, TRANSPORTS } from '../actors/harness.ts'
import { agent, call, eventually } from './harness.ts'

const RUNS = 30

describe.each(TRANSPORTS)('a host with many runs at once ($name)', (transport) => {
  it('thirty remote runs on one host: no MaxListenersExceededWarning, and closing the host stops them all', async () => {
    const warnings: string[] = []
    const onWarning = (warning: Error) => warnings.push(`${warning.name}: ${warning.message}`)
    process.on('warning', onWarning)
    try {
      const deployment = await deploy(transport)
      const { subjects } = deployment
      const parent = createAgentSystem({ bus: await deployment.bus('parent'), subjects, hostId: 'parent-host' })
      const host = createAgentSystem({ bus: await deployment.bus('child-host'), subjects, hostId: 'child-host' })
      deployment.defer(() => Promise.all([parent.close(), host.close()]))
      let started = 0
      const hold = tool({
        name: 'hold',
        description: 'Holds until the run is cancelled.',
        schema: z.object({}),
        execute: (_args, { signal }) =>
          new Promise((_resolve, reject) => {
            started++
            signal.addEventListener('abort', () => reject(signal.reason), { once: true })
          }),
      })
      const child = agent({ id: 'child', tools: [hold], script: Array.from({ length: RUNS }, () => call('hold', {})) })
      host.add(child.agent)
      await host.serve()
      // The caller's one deadline for every run (the parent side of each remote run watches it too).
      const deadline = new AbortController()
      const runs = Array.from({ length: RUNS }, (_, i) => parent.run('child', `task ${i}`, { signal: deadline.signal }))
      for (const run of runs) run.catch(() => {})
      await eventually(() => started === RUNS, 10_000, `${RUNS} runs holding on the host`)
      await host.close()
      const outcomes = await Promise.allSettled(runs)
      expect(outcomes.map((outcome) => outcome.status)).toEqual(Array.from({ length: RUNS }, () => 'rejected'))
      // A warning is emitted on the next tick after the listener that crossed the limit.
      await new Promise<void>((resolve) => setImmediate(resolve))
      expect(warnings.filter((warning) => warning.startsWith('MaxListenersExceededWarning'))).toEqual([])
    } finally {
      process.off('warning', onWarning)
    }
  })
})

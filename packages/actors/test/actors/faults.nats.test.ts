/**
 * Faults with a real, private nats-server (spawned on a free port, stopped and restarted by pid):
 * a server restart while an approval is pending and while a decision is in flight (applied
 * exactly once, the run completes), and a tool host that dies or stops mid-call (a clear error
 * result for the model, and the run goes on).
 */
import { type ChildProcess, spawn } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { remoteReviewer, remoteTool, serveReviewer, serveTools } from '@signalbox/actors'
import { connectNatsBus, type NatsBus } from '@signalbox/actors/nats'
import { type ApprovalRequest, createAgent, policyReviewer, tool } from '@signalbox/core'
import { createSubjects, type Subjects } from '@signalbox/core/bus'
import { ScriptedProvider } from '@signalbox/core/testing'
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest'
import { z } from 'zod'
import { tsScript } from '../../../../test/support/built.ts'
import { uniquePrefix } from '../../../../test/support/env.ts'
import { type NatsServer, startNatsServer } from '../../../../test/support/nats-server.ts'
import { whileWaiting } from '../../../../test/support/waiting.ts'
import { deferred, eventually, payTool, readByModel, recordEvents, sleep, trackedAudit, within } from './harness.ts'

let server: NatsServer
beforeAll(async () => {
  server = await startNatsServer()
})
afterAll(async () => {
  await server?.dispose()
})

/** Buses of one test, on the private server, closed when the test ends. */
function world() {
  const prefix = uniquePrefix()
  const subjects: Subjects = createSubjects(prefix)
  const buses: NatsBus[] = []
  const cleanups: (() => unknown)[] = []
  const handlerErrors: unknown[] = []
  const reconnects = new Map<NatsBus, number>()
  onTestFinished(async () => {
    for (const cleanup of cleanups.reverse())
      await Promise.resolve()
        .then(cleanup)
        .catch(() => {})
    await Promise.allSettled(buses.map((bus) => bus.close()))
  })
  return {
    prefix,
    subjects,
    handlerErrors,
    defer: (cleanup: () => unknown) => cleanups.push(cleanup),
    async bus(name: string) {
      const bus = await connectNatsBus({
        servers: server.url,
        prefix,
        name: `${name}-${prefix}`,
        reconnectTimeWaitMs: 50,
        publishAttemptTimeoutMs: 500,
        drainTimeoutMs: 500,
        onHandlerError: (error) => handlerErrors.push(error),
      })
      buses.push(bus)
      bus.onStatus((status) => {
        if (status.type === 'reconnect') reconnects.set(bus, (reconnects.get(bus) ?? 0) + 1)
      })
      return bus
    },
    /** Resolves once `bus` has reconnected at least once (after a restart). */
    reconnected: (bus: NatsBus) => eventually(() => (reconnects.get(bus) ?? 0) > 0, 8_000, `${bus.name} to reconnect`),
  }
}

/** Messages stored in the stream on `subject` (asked over the given bus's JetStream API). */
async function stored(bus: NatsBus, subject: string): Promise<number> {
  const jsm = await bus.manager()
  const info = await jsm.streams.info(bus.streamName, { subjects_filter: subject })
  return info.state.subjects?.[subject] ?? 0
}

/** The paying agent of the approval faults (its reviewer is on the bus). */
async function payingAgent(w: ReturnType<typeof world>) {
  const bus = await w.bus('agent')
  const audit = trackedAudit()
  const reviewer = remoteReviewer({ bus, subjects: w.subjects, audit: audit.log })
  w.defer(() => reviewer.close())
  const pay = payTool()
  const provider = new ScriptedProvider({
    script: [{ toolCalls: [{ id: 'call_pay', name: 'pay', arguments: { to: 'bob', amount: 42 } }] }, { content: 'done' }],
  })
  const agent = createAgent({ id: 'payer', provider, tools: [pay.tool], reviewer, audit: audit.log, approvalTimeoutMs: 9_000 })
  return { bus, agent, pay, audit, provider, events: recordEvents(agent) }
}

describe('faults with a real nats-server (restart, host death)', () => {
  it('restart while an approval is pending: the request survives, the decision is applied once, the run completes', async () => {
    const w = world()
    const s = await payingAgent(w)
    const handle = s.agent.start('pay bob')
    // The request is stored before the restart, and nobody has seen it yet.
    await eventually(async () => (await stored(s.bus, w.subjects.approvals('payer'))) === 1, 5_000, 'the stored approval request')

    await server.restart()

    const reviewerBus = await w.bus('reviewer')
    const decisions: ApprovalRequest[] = []
    const service = serveReviewer({
      bus: reviewerBus,
      subjects: w.subjects,
      reviewer: policyReviewer(() => true, { name: 'after-restart' }),
      onDecision: (request) => decisions.push(request),
    })
    w.defer(() => service.close())

    const result = await within(handle.result, 8_000, 'the run after the restart')
    expect(result.output).toBe('done')
    expect(s.pay.paid).toEqual([{ to: 'bob', amount: 42 }])
    expect(readByModel(s.provider, 'call_pay')).toBe('paid 42 to bob')
    // Reported once its store is acknowledged, which may come after the agent read it.
    await eventually(() => decisions.length > 0, 10_000, 'the decision reported as made')
    await sleep(200) // a duplicate decision would be recorded by now
    expect(s.audit.of('approval.granted')).toMatchObject([{ actor: 'after-restart' }])
    expect(s.audit.of('approval.rejected')).toEqual([])
    expect(s.audit.of('approval.timeout')).toEqual([])
    expect(decisions).toHaveLength(1)
    expect(await stored(s.bus, w.subjects.approvalDecisions('payer'))).toBe(1)
    expect(w.handlerErrors).toEqual([])
  })

  for (const when of ['as the decision is published', 'just after the decision is stored'] as const) {
    it(`restart ${when}: no decision lost or applied twice; the run completes`, async () => {
      const w = world()
      const s = await payingAgent(w)
      const reviewerBus = await w.bus('reviewer')
      let restarting: Promise<void> | undefined
      const decided: string[] = []
      const service = serveReviewer({
        bus: reviewerBus,
        subjects: w.subjects,
        reviewer: policyReviewer(
          () => {
            // SIGTERM goes out synchronously: the decision below is published to a dying server.
            if (when === 'as the decision is published') restarting ??= server.restart()
            return true
          },
          { name: 'in-flight' },
        ),
        onDecision: (request) => {
          decided.push(request.requestId)
          if (when === 'just after the decision is stored') restarting ??= server.restart()
        },
      })
      w.defer(() => service.close())
      await service.ready

      const result = await within(s.agent.run('pay bob'), 8_000, 'the run across the restart')
      await eventually(() => decided.length === 1, 5_000, 'the reviewer service to see its decision stored')
      await within(restarting ?? Promise.reject(new Error('the server was never restarted')), 8_000, 'the restart')
      // Both sides are back (their consumers re-established): a decision delivered again would be recorded now.
      await Promise.all([w.reconnected(s.bus), w.reconnected(reviewerBus)])
      await Promise.all([s.bus.flush(), reviewerBus.flush()])
      await sleep(300)

      expect(result.output).toBe('done')
      expect(s.pay.paid).toHaveLength(1)
      expect(s.audit.of('approval.granted')).toHaveLength(1)
      expect(s.audit.of('approval.rejected')).toEqual([])
      expect(await stored(s.bus, w.subjects.approvalDecisions('payer'))).toBe(1)
      expect(w.handlerErrors).toEqual([])
    })
  }

  it('a tool host process killed mid-call: a timeout result, then "no host"; the run goes on', async () => {
    const w = world()
    const host = await spawnToolHost(w.prefix)
    const bus = await w.bus('agent')
    const stall = () =>
      remoteTool({
        bus,
        subjects: w.subjects,
        name: 'stall',
        description: 'x',
        parameters: { type: 'object', properties: {} },
        timeoutMs: 1_500,
      })
    const provider = new ScriptedProvider({
      script: [
        { toolCalls: [{ id: 'call_1', name: 'stall', arguments: {} }] },
        { toolCalls: [{ id: 'call_2', name: 'stall', arguments: {} }] },
        { content: 'gave up on stall' },
      ],
    })
    const agent = createAgent({ id: 'caller', provider, tools: [stall()] })

    const run = agent.run('stall twice')
    // No budgets of our own here: under load the call and the run take what they take; the
    // answers the model read (below) say which path each call took.
    await named(host.started, 'the call to reach the host process')
    host.kill()
    const result = await named(run, 'the run after the host died')

    expect(result.output).toBe('gave up on stall')
    expect(readByModel(provider, 'call_1')).toBe('Error: "stall" did not answer within 1.5s (its host may have stopped).')
    expect(readByModel(provider, 'call_2')).toBe(
      'Error: No tool host is serving "stall" right now. Try another way, or tell the person.',
    )
  })

  it('a tool host closed mid-call (then its connection): the caller gets a clear error at once; the run goes on', async () => {
    const w = world()
    const hostBus = await w.bus('host')
    const started = deferred()
    const stuck = tool({
      name: 'stuck',
      description: 'Starts, then waits forever, ignoring its signal.',
      schema: z.object({}),
      execute: () => {
        started.resolve()
        return new Promise(() => {})
      },
    })
    const served = serveTools({ bus: hostBus, subjects: w.subjects, tools: [stuck] })
    await served.ready
    const bus = await w.bus('agent')
    const provider = new ScriptedProvider({
      script: [{ toolCalls: [{ id: 'call_1', name: 'stuck', arguments: {} }] }, { content: 'moved on' }],
    })
    const agent = createAgent({
      id: 'caller',
      provider,
      tools: [
        remoteTool({
          bus,
          subjects: w.subjects,
          name: 'stuck',
          description: 'x',
          parameters: stuck.parameters,
          timeoutMs: 8_000,
        }),
      ],
    })

    const run = agent.run('go')
    await within(started.promise, 5_000, 'the call to start on the host')
    const stoppedAt = Date.now()
    served.close()
    await hostBus.close()
    const result = await within(run, 5_000, 'the run after the host stopped')

    expect(result.output).toBe('moved on')
    expect(Date.now() - stoppedAt).toBeLessThan(3_000)
    expect(readByModel(provider, 'call_1')).toMatch(/^Error: The tool host stopped while running "stuck"/)
  })
})

const here = path.dirname(fileURLToPath(import.meta.url))
const repoRoot = path.resolve(here, '../../../..')

/** Starts `fixtures/tool-host-process.ts` as its own process; resolves once it serves. */
async function spawnToolHost(prefix: string) {
  // One process (`node --import <loader>`), not a CLI that runs the script in a grandchild a kill by pid would miss.
  const script = path.join(here, 'fixtures/tool-host-process.ts')
  const child: ChildProcess = spawn(process.execPath, [...tsScript(script)], {
    cwd: repoRoot,
    env: { ...process.env, SBX_NATS_URL: server.url, SBX_PREFIX: prefix },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const kill = () => {
    if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) process.kill(child.pid, 'SIGKILL')
  }
  onTestFinished(kill)
  const ready = deferred()
  const started = deferred()
  let output = ''
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString()
    if (output.includes('ready\n')) ready.resolve()
    if (output.includes('started ')) started.resolve()
  })
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString()
  })
  child.once('exit', (code) => ready.reject(new Error(`the tool host exited (${code}):\n${output}`)))
  // Its readiness line, however long start-up takes under load (the test's time limit is the guard).
  await named(ready.promise, 'the tool host process to print "ready"', () => output)
  return { started: started.promise, kill }
}

/** Awaits `promise`; if the test fails first (its time limit), the report names what it waited for. */
async function named<T>(promise: Promise<T>, what: string, output: () => string = () => ''): Promise<T> {
  const waited = whileWaiting(() => `${what}${output() ? `; output so far:\n${output()}` : ''}`)
  try {
    return await promise
  } finally {
    waited()
  }
}

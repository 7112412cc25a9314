/**
 * An agent without a run store dies (SIGKILL) while a person has its request on screen: the
 * request is withdrawn from that person, marked orphaned for every reviewer (a stored denial by
 * `system`), and audited; a reviewer started later is not shown it. A live agent's request,
 * waiting just as long, is not touched.
 */
import type { ApprovalRequest, Reviewer } from '@signalbox/core'
import { createSubjects } from '@signalbox/core/bus'
import { describe, expect, it, onTestFinished } from 'vitest'
import { startCrashChild } from '../../../../test/support/crash-harness.ts'
import { NATS_URL, uniquePrefix } from '../../../../test/support/env.ts'
import { remoteReviewer, serveReviewer } from '../../src/index.ts'
import { connectNatsBus, type NatsBus } from '../../src/nats/index.ts'
import { payingAgent } from './fixtures/paying-agent.ts'
import { eventually, sleep, trackedAudit } from './harness.ts'

const HEARTBEAT_MS = 300

/** A person looking at requests who never decides; remembers what was withdrawn from them. */
function lookingPerson() {
  const shown: ApprovalRequest[] = []
  const withdrawn: string[] = []
  const reviewer: Reviewer = {
    review: (request, { signal }) => {
      shown.push(request)
      return new Promise((_, reject) =>
        signal.addEventListener('abort', () => {
          withdrawn.push(request.requestId)
          reject(signal.reason)
        }),
      )
    },
  }
  return { reviewer, shown, withdrawn }
}

/** A private prefix on the shared server; connections and closers are undone when the test ends. */
function deployment() {
  const prefix = uniquePrefix()
  const subjects = createSubjects(prefix)
  const buses: NatsBus[] = []
  const closers: (() => void)[] = []
  onTestFinished(async () => {
    for (const close of closers) close()
    await Promise.allSettled(buses.map((bus) => bus.close()))
    const admin = await connectNatsBus({ servers: NATS_URL, prefix, name: 'orphan-cleanup' })
    await (await admin.manager()).streams.delete(admin.streamName).catch(() => {})
    await admin.close()
  })
  const open = async (name: string) => {
    const bus = await connectNatsBus({ servers: NATS_URL, prefix, name: `${name}-${prefix}` })
    buses.push(bus)
    return bus
  }
  return { prefix, subjects, open, closers }
}

describe('orphaned approval requests (agent without a store, killed)', () => {
  it('withdrawn from the reviewer, marked orphaned for all, audited; a live agent’s request is kept', async () => {
    const { prefix, subjects, open, closers } = deployment()
    const reviewerBus = await open('reviewer')
    const audit = trackedAudit()
    const person = lookingPerson()
    const orphaned: ApprovalRequest[] = []
    const service = serveReviewer({
      bus: reviewerBus,
      subjects,
      reviewer: person.reviewer,
      audit: audit.log,
      onOrphaned: (request) => orphaned.push(request),
    })
    closers.push(() => service.close())
    await service.ready

    const agent = await startCrashChild('packages/actors/test/actors/fixtures/waiting-agent-process.ts', {
      args: [NATS_URL, prefix, String(HEARTBEAT_MS)],
      ready: 'ready',
    })
    const requestId = (await agent.waitForLine(/^requested /)).replace('requested ', '').trim()
    await eventually(() => person.shown.length === 1, 10_000, 'the person to be shown the request')
    expect(person.shown[0]?.requestId).toBe(requestId)

    // Alive for well over the orphan limit (3 heartbeats): nothing is withdrawn.
    await sleep(HEARTBEAT_MS * 6)
    expect(person.withdrawn).toEqual([])
    expect(orphaned).toEqual([])

    await agent.kill('SIGKILL')

    await eventually(() => person.withdrawn.length === 1, 10_000, 'the request to be withdrawn from the person')
    expect(person.withdrawn).toEqual([requestId])
    await eventually(() => orphaned.length === 1, 5_000, 'the orphan to be reported')
    expect(orphaned[0]).toMatchObject({ requestId, callId: 'call_pay', toolName: 'pay' })
    await eventually(() => audit.of('approval.orphaned').length === 1, 5_000, 'the audit entry')
    expect(audit.of('approval.orphaned')).toMatchObject([
      {
        kind: 'approval.orphaned',
        agentId: 'payer',
        callId: 'call_pay',
        toolName: 'pay',
        shown: { to: 'bob', amount: 42 },
        decision: 'orphaned',
        actor: 'system',
      },
    ])

    // A reviewer started later replays the log: the request is settled (orphaned), not shown.
    const lateBus = await open('late-reviewer')
    const late = lookingPerson()
    const lateService = serveReviewer({ bus: lateBus, subjects, reviewer: late.reviewer, mode: 'broadcast' })
    closers.push(() => lateService.close())
    await lateService.ready
    await sleep(500)
    expect(late.shown).toEqual([])

    // The mark is one stored denial by `system`, saying why.
    const jsm = await reviewerBus.manager()
    const stored = await jsm.streams.getMessage(reviewerBus.streamName, { last_by_subj: subjects.approvalDecisions('payer') })
    expect(stored?.json()).toMatchObject({
      requestId,
      approved: false,
      reviewer: 'system',
      reason: expect.stringMatching(/^orphaned: /),
    })
  }, 60_000)

  it('a reviewer service stalled past the orphan limit does not withdraw a live agent’s request', async () => {
    // Seen under a loaded CI: the event loop of the process holding both the agent and the reviewer
    // stalls for seconds; when it wakes, the orphan check and the heartbeat timer fire together and
    // the heartbeat is still in flight. The check must look again before calling the agent gone.
    const { subjects, open, closers } = deployment()
    const person = lookingPerson()
    const orphaned: ApprovalRequest[] = []
    const service = serveReviewer({
      bus: await open('reviewer'),
      subjects,
      reviewer: person.reviewer,
      onOrphaned: (request) => orphaned.push(request),
    })
    closers.push(() => service.close())
    await service.ready
    const reviewer = remoteReviewer({ bus: await open('agent'), subjects, heartbeatMs: HEARTBEAT_MS })
    closers.push(() => reviewer.close())
    const agent = payingAgent(reviewer)
    const handle = agent.start('pay bob 42')
    const outcome = handle.result.catch((error: unknown) => error)
    closers.push(() => handle.cancel('test over'))
    await eventually(() => person.shown.length === 1, 10_000, 'the person to be shown the request')

    // Both timers overdue at once: the check fires before the heartbeat published in the same turn is back.
    const stalledUntil = Date.now() + HEARTBEAT_MS * 8
    while (Date.now() < stalledUntil) {
      // a stalled event loop
    }
    await sleep(HEARTBEAT_MS * 6)
    expect(person.withdrawn).toEqual([])
    expect(orphaned).toEqual([])
    handle.cancel('test over')
    expect(await outcome).toBeInstanceOf(Error)
  }, 30_000)
})

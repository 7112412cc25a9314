/**
 * People across the tree: approvals from any agent of a run tree reach reviewers with the full
 * path (root → parent → child, run ids and agent ids); a decision for one branch never applies to
 * another; a correction aimed at one run of one agent reaches only it; events carry the tree.
 */

import { remoteAnswerer, remoteReviewer, serveAnswerer, watchEvents } from '@signalbox/actors'
import { delegateTool, fanOutTool } from '@signalbox/actors/system'
import {
  type AgentEvent,
  type ApprovalDecision,
  type ApprovalRequest,
  askHumanTool,
  functionAnswerer,
  type Question,
  type Reviewer,
  tool,
} from '@signalbox/core'
import { type ApprovalDecisionMessage, encodeMessage, PROTOCOL_VERSION } from '@signalbox/core/protocol'
import type { RecordedRequest } from '@signalbox/core/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { watchRejections } from '../actors/harness.ts'
import { agent, answer, call, eventually, ofType, sleep, TOPOLOGIES, type Topology, taskOf, topology } from './harness.ts'

const BRANCHES = ['Hotel Alvear', 'Hotel Costa Galana']

/** A reviewer that never answers by itself: the test decides (in one process). */
const heldReviewer: Reviewer = {
  review: (_request, { signal }) =>
    new Promise<ApprovalDecision>((_resolve, reject) =>
      signal.addEventListener('abort', () => reject(new Error('withdrawn')), { once: true }),
    ),
}

/** travel (root) → concierge (parent) → hotel ×2 (two branches), each hotel run waiting for approval. */
async function tree(name: (typeof TOPOLOGIES)[number]) {
  const t = await topology(name)
  const booked: string[] = []
  const bookRoom = tool({
    name: 'book_room',
    description: 'Books a room. Irreversible.',
    schema: z.object({ hotel: z.string() }),
    needsApproval: true,
    execute: ({ hotel }) => {
      booked.push(hotel)
      return `Booked a room at ${hotel}.`
    },
  })
  const travel = agent({
    id: 'travel',
    tools: [delegateTool(t.parent, 'concierge')],
    script: [call('ask_concierge', { task: 'Book both hotels.' }), answer('Travel plan ready.')],
  })
  const concierge = agent({
    id: 'concierge',
    tools: [fanOutTool(t.child, 'hotel')],
    script: [call('ask_hotel_each', { tasks: BRANCHES }), answer('Hotels handled.')],
  })
  const hotel = agent({
    id: 'hotel',
    tools: [bookRoom],
    reviewer: t.childBus ? remoteReviewer({ bus: t.childBus, subjects: t.subjects }) : heldReviewer,
    script: (request: RecordedRequest) => {
      const last = request.messages.at(-1)
      if (last?.role !== 'tool') return { toolCalls: [{ name: 'book_room', arguments: { hotel: taskOf(request) } }] }
      return { content: `${taskOf(request)}: ${last.content}` }
    },
  })
  t.parent.add(travel.agent)
  t.child.add(concierge.agent).add(hotel.agent)
  await t.start()
  return { t, travel, concierge, hotel, booked }
}

/** Delivers `decision` the way a reviewer would: on the bus, or to the run's actor in one process. */
async function decide(t: Topology, request: ApprovalRequest, decision: ApprovalDecision): Promise<void> {
  if (t.bus) {
    const message: ApprovalDecisionMessage = { v: PROTOCOL_VERSION, type: 'approval.decision', ...decision }
    await t.bus.durablePublish(t.subjects.approvalDecisions(request.agentId), encodeMessage(message), {
      msgId: `test-${decision.requestId}-${decision.reviewer}-${decision.digest.slice(-8)}-${decision.callId}`,
    })
    return
  }
  t.child.get(request.agentId)?.runs.get(request.runId)?.actor.send({ type: 'approval.decision', decision })
}

const verdict = (request: ApprovalRequest, approved: boolean, reviewer = 'ana'): ApprovalDecision => ({
  requestId: request.requestId,
  callId: request.callId,
  digest: request.digest,
  approved,
  reviewer,
  decidedAt: Date.now(),
})

async function pendingRequests(hotel: { events: AgentEvent[] }): Promise<[ApprovalRequest, ApprovalRequest]> {
  await eventually(() => ofType(hotel.events, 'approval.requested').length === 2, 5_000, 'both branches ask for approval')
  const requests = ofType(hotel.events, 'approval.requested').map((e) => e.request)
  const byHotel = (name: string) => requests.find((r) => (r.arguments as { hotel: string }).hotel === name) as ApprovalRequest
  return [byHotel(BRANCHES[0] as string), byHotel(BRANCHES[1] as string)]
}

describe.each(TOPOLOGIES)('a run tree with people in it (%s)', (name) => {
  it('approvals carry the full path; a decision quoting another branch’s request is rejected, never applied', async () => {
    const { t, travel, concierge, hotel, booked } = await tree(name)
    const rejections = t.bus ? await watchRejections(t.bus, t.subjects) : undefined
    const busEvents: AgentEvent[] = []
    if (t.bus) {
      const watching = watchEvents({
        bus: t.bus,
        subjects: t.subjects,
        agentId: 'hotel',
        onEvent: (event) => busEvents.push(event),
      })
      await watching.ready
      t.deployment?.defer(() => watching.unsubscribe())
    }
    const running = t.parent.run('travel', 'Plan my trip.')
    const [alvear, costa] = await pendingRequests(hotel)

    const rootRunId = ofType(travel.events, 'run.start')[0]?.runId as string
    const conciergeRunId = ofType(concierge.events, 'run.start')[0]?.runId as string
    for (const request of [alvear, costa]) {
      expect(request).toMatchObject({
        agentId: 'hotel',
        toolName: 'book_room',
        runPath: [rootRunId, conciergeRunId],
        agentPath: ['travel', 'concierge'],
      })
    }
    expect(alvear.runId).not.toBe(costa.runId)
    expect(alvear.digest).not.toBe(costa.digest)

    // Forged: Costa's request id with Alvear's call and digest; Alvear's request id with Costa's digest.
    await decide(t, costa, { ...verdict(alvear, true, 'mallory'), requestId: costa.requestId })
    await decide(t, alvear, { ...verdict(alvear, true, 'mallory'), digest: costa.digest })
    if (rejections) {
      const rejected = await rejections.waitFor('agent-approvals', 2, 5_000)
      expect(rejected.map((r) => r.error.message).join('\n')).toMatch(/does not match the pending call/)
    } else {
      await eventually(() => ofType(hotel.events, 'approval.rejected').length === 2, 3_000, 'two rejections')
      expect(
        ofType(hotel.events, 'approval.rejected')
          .map((e) => e.request?.runId)
          .sort(),
      ).toEqual([alvear.runId, costa.runId].sort())
    }
    await sleep(150)
    expect(booked).toEqual([])
    expect(ofType(hotel.events, 'approval.decided')).toEqual([])

    // The real decisions: each applies to its own branch only.
    await decide(t, alvear, verdict(alvear, true))
    await decide(t, costa, verdict(costa, false))
    const result = await running
    expect(result.output).toBe('Travel plan ready.')
    expect(booked).toEqual(['Hotel Alvear'])
    concierge.provider.assertDone()
    const fanned = concierge.provider.requests[1]?.messages.at(-1)?.content as string
    expect(fanned).toContain('1. Hotel Alvear: Booked a room at Hotel Alvear.')
    expect(fanned).toMatch(/2\. Hotel Costa Galana: Denied by ana/)
    const decided = ofType(hotel.events, 'approval.decided')
    expect(decided.map((e) => [e.request.runId, e.decision.approved]).sort()).toEqual(
      [
        [alvear.runId, true],
        [costa.runId, false],
      ].sort(),
    )

    if (t.bus) {
      // Over the bus, observers see the tree too.
      await eventually(() => busEvents.some((e) => e.type === 'run.end'), 3_000, 'hotel events on the bus')
      const requested = busEvents.filter((e) => e.type === 'approval.requested')
      expect(requested).toHaveLength(2)
      for (const event of requested) {
        expect(event).toMatchObject({
          agentId: 'hotel',
          parentRunId: conciergeRunId,
          runPath: [rootRunId, conciergeRunId],
          agentPath: ['travel', 'concierge'],
        })
      }
    }
  })

  it('a correction aimed at one run of one agent reaches only that run', async () => {
    const { t, hotel, booked } = await tree(name)
    const running = t.parent.run('travel', 'Plan my trip.')
    const [alvear, costa] = await pendingRequests(hotel)

    // From the root's side: the system finds the run (here, or over the bus on the hotel's host).
    await t.parent.steer({
      agentId: 'hotel',
      runId: alvear.runId,
      text: 'Pick something cheaper than the Alvear.',
      from: 'lucia',
    })
    await eventually(() => ofType(hotel.events, 'steering.applied').length === 1, 5_000, 'the correction is applied')
    const applied = ofType(hotel.events, 'steering.applied')[0]
    expect(applied).toMatchObject({ runId: alvear.runId, toolName: 'book_room', from: 'lucia' })

    await decide(t, costa, verdict(costa, true))
    const result = await running
    expect(result.output).toBe('Travel plan ready.')
    expect(booked).toEqual(['Hotel Costa Galana'])
    // Only the Alvear branch's model read the correction; the Costa branch never saw it.
    const sawCorrection = hotel.provider.requests.filter((r) => JSON.stringify(r.messages).includes('cheaper than the Alvear'))
    expect(sawCorrection.length).toBeGreaterThan(0)
    for (const request of sawCorrection) expect(taskOf(request)).toBe('Hotel Alvear')
    expect(ofType(hotel.events, 'steering.queued').map((e) => e.runId)).toEqual([alvear.runId])
  })

  it('a question from a child reaches the person with the path it comes from', async () => {
    const t = await topology(name)
    const asked: Question[] = []
    const person = functionAnswerer(
      (question) => {
        asked.push(question)
        return 'Window, please.'
      },
      { name: 'lucia' },
    )
    // Over the bus the person answers from the parent's side; in one process, next to the child.
    let answerer = person
    if (t.bus && t.childBus) {
      const service = serveAnswerer({ bus: t.bus, subjects: t.subjects, answerer: person, agentId: 'concierge' })
      await service.ready
      t.deployment?.defer(() => service.close())
      const remote = remoteAnswerer({ bus: t.childBus, subjects: t.subjects })
      t.deployment?.defer(() => remote.close())
      answerer = remote
    }
    const travel = agent({
      id: 'travel',
      tools: [delegateTool(t.parent, 'concierge')],
      script: [call('ask_concierge', { task: 'Pick a seat.' }), answer('Seat picked.')],
    })
    const concierge = agent({
      id: 'concierge',
      tools: [askHumanTool({ answerer })],
      script: [call('ask_human', { question: 'Window or aisle?' }), answer('A window seat.')],
    })
    t.parent.add(travel.agent)
    t.child.add(concierge.agent)
    await t.start()
    const result = await t.parent.run('travel', 'Book my seat.')
    expect(result.output).toBe('Seat picked.')
    expect(asked).toHaveLength(1)
    expect(asked[0]).toMatchObject({
      agentId: 'concierge',
      question: 'Window or aisle?',
      runPath: [result.runId],
      agentPath: ['travel'],
    })
    expect(concierge.provider.requests[1]?.messages.at(-1)).toMatchObject({ role: 'tool', content: 'Window, please.' })
  })
})

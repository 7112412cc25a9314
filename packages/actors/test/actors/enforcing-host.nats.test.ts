/**
 * A tool host that verifies approvals itself, over real NATS, called by a raw bus client (what a
 * compromised agent is): a gated call runs only with the reviewer's signed decision for exactly
 * that call, by a key the host's policy allows for the tool, before its deadline, once. Everything
 * else is refused with the reason, audited on the bus as `tool.refused`, and never runs.
 */

import { createHash } from 'node:crypto'
import { Kvm } from '@nats-io/kv'
import { busAuditLog, readAudit, serveTools } from '@signalbox/actors'
import { type Clock, decideApproval, systemClock, type Tool, tool } from '@signalbox/core'
import { type Bus, usedApprovalsBucket } from '@signalbox/core/bus'
import {
  type ApprovalDecisionMessage,
  callDigest,
  decodeMessage,
  ErrorMessage,
  encodeMessage,
  type ToolCallMessage,
  ToolResultMessage,
} from '@signalbox/core/protocol'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import type { NatsBus } from '../../src/nats/index.ts'
import { type HostApprovalOptions, IDEMPOTENCY_KEY_HEADER } from '../../src/tools/tool-host.ts'
import { createSigner, createTrustPolicy, newUserSeed, type Signer } from '../../src/trust/index.ts'
import { type Deployment, deferred, deploy, nats, trackedAudit } from './harness.ts'

const tina = createSigner(newUserSeed())
const mallory = createSigner(newUserSeed())
const eve = createSigner(newUserSeed())
/** tina approves drop_claw; mallory is known, but only for move_claw; eve is unknown. */
const policy = createTrustPolicy({
  keys: { [tina.publicKey]: 'tina', [mallory.publicKey]: 'mallory' },
  reviewers: { drop_claw: [tina.publicKey], move_claw: [mallory.publicKey] },
})

const Reply = z.discriminatedUnion('type', [ToolResultMessage, ErrorMessage])
type Reply = z.infer<typeof Reply>

function clawTools(gate?: Promise<void>) {
  const dropped: number[] = []
  const moved: string[] = []
  const tools: Tool<any>[] = [
    tool({
      name: 'drop_claw',
      description: 'Drop the claw into a bin. Irreversible.',
      schema: z.object({ bin: z.number().int() }),
      needsApproval: true,
      execute: async ({ bin }) => {
        dropped.push(bin)
        await gate
        return `dropped into bin ${bin}`
      },
    }),
    tool({
      name: 'move_claw',
      description: 'Move the claw.',
      schema: z.object({ to: z.string() }),
      execute: ({ to }) => {
        moved.push(to)
        return `moved to ${to}`
      },
    }),
    tool({
      name: 'refund',
      description: 'Refund credits; more than 5 needs approval.',
      schema: z.object({ credits: z.number().int() }),
      needsApproval: ({ credits }) => credits > 5,
      execute: ({ credits }) => `refunded ${credits}`,
    }),
  ]
  return { tools, dropped, moved }
}

async function enforcingHost(
  d: Deployment,
  options: { gate?: Promise<void>; clock?: Clock; ledger?: HostApprovalOptions['ledger']; queue?: string } = {},
) {
  const bus = await d.bus('host')
  const audit = trackedAudit(busAuditLog({ bus, subjects: d.subjects }))
  const claw = clawTools(options.gate)
  const refusals: { callId: string; code: string; reason: string }[] = []
  const host = serveTools({
    bus,
    subjects: d.subjects,
    tools: claw.tools,
    approvals: { trust: policy, audit: audit.log, ...(options.ledger !== undefined ? { ledger: options.ledger } : {}) },
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.queue ? { queue: options.queue } : {}),
    onRefused: (call, refusal) => refusals.push({ callId: call.callId, code: refusal.code, reason: refusal.reason }),
  })
  d.defer(() => host.close())
  await host.ready
  /** Stops taking calls, once the server knows (a call routed to a closed subscription would go unanswered). */
  const stop = async () => {
    host.close()
    await (bus as NatsBus).connection.flush()
  }
  return { ...claw, audit, refusals, host, stop }
}

async function deleteStream(bus: Bus, stream: string): Promise<void> {
  await (bus as NatsBus).connection.request(`$JS.API.STREAM.DELETE.${stream}`).catch(() => {})
}

let counter = 0
/** A reviewer's signed approval of `call`, as the reviewer service makes it (deadline a minute away). */
function approvalOf(
  signer: Signer,
  call: { callId: string; toolName?: string; arguments: unknown },
  over: Partial<ApprovalDecisionMessage> = {},
  now = Date.now(),
): ApprovalDecisionMessage {
  const toolName = call.toolName ?? 'drop_claw'
  const request = {
    requestId: `req-${++counter}`,
    agentId: 'claw',
    runId: 'run-1',
    runPath: [],
    callId: call.callId,
    toolName,
    arguments: call.arguments,
    digest: callDigest(toolName, call.arguments),
    deadline: now + 60_000,
    requestedAt: now,
  }
  return signer.sign({ v: 1, type: 'approval.decision', ...decideApproval(request, true, 'tina', now), ...over })
}

/** What a raw client (a compromised agent) sends: any call, any approval, any idempotency key. */
async function callTool(
  bus: Bus,
  d: Deployment,
  call: { callId: string; toolName?: string; arguments: unknown; approval?: unknown; key?: string; runId?: string },
): Promise<Reply> {
  const toolName = call.toolName ?? 'drop_claw'
  const runId = call.runId ?? 'run-1'
  const message: ToolCallMessage = {
    v: 1,
    type: 'tool.call',
    callId: call.callId,
    toolName,
    agentId: 'claw',
    runId,
    arguments: call.arguments,
    deadline: Date.now() + 60_000,
    ...(call.approval !== undefined ? { approval: call.approval as Record<string, unknown> } : {}),
  }
  const response = await bus.request(d.subjects.tool(toolName), encodeMessage(message), {
    // Generous: under load a first call also creates the pool's ledger bucket.
    timeoutMs: 15_000,
    headers: { [IDEMPOTENCY_KEY_HEADER]: call.key ?? `${runId}:${call.callId}` },
  })
  const decoded = decodeMessage(response.data, Reply)
  if (!decoded.ok) throw decoded.error
  return decoded.value
}

/** Whether the pool's ledger holds the answer of the call that used the decision `requestId`. */
async function recordedAnswer(bus: Bus, d: Deployment, requestId: string): Promise<boolean> {
  const kv = await new Kvm((bus as NatsBus).connection).open(usedApprovalsBucket(d.prefix))
  const entry = await kv.get(createHash('sha256').update(requestId).digest('hex'))
  return entry?.operation === 'PUT' && (entry.json() as { answer?: unknown }).answer !== undefined
}

const refusal = (reply: Reply) =>
  reply.type === 'error' ? { code: reply.error.code, reason: reply.error.details?.reason, message: reply.error.message } : reply

describe('a tool host that verifies approvals (nats)', () => {
  it('refuses a compromised agent calling a gated tool directly: no decision, forged, for another call or other arguments, by a key not allowed, expired', async () => {
    const d = await deploy(nats)
    const host = await enforcingHost(d)
    const attacker = await d.bus('compromised-agent')
    const args = { bin: 3 }
    const now = Date.now()
    const { signer: _s, signature: _sig, ...unsigned } = approvalOf(tina, { callId: 'c-unsigned', arguments: args })
    const cases: [string, Parameters<typeof callTool>[2], string, string | RegExp][] = [
      ['no decision', { callId: 'c-none', arguments: args }, 'missing', /carries none/],
      ['not a decision', { callId: 'c-junk', arguments: args, approval: { approved: true } }, 'malformed', /approval\.decision/],
      ['unsigned', { callId: 'c-unsigned', arguments: args, approval: unsigned }, 'unsigned', /not signed/],
      [
        'altered after signing',
        {
          callId: 'c-altered',
          arguments: args,
          approval: {
            ...approvalOf(tina, { callId: 'c-altered', arguments: { bin: 9 } }),
            digest: callDigest('drop_claw', args),
          },
        },
        'bad-signature',
        /does not verify/,
      ],
      [
        'for another call',
        { callId: 'c-other', arguments: args, approval: approvalOf(tina, { callId: 'c-approved', arguments: args }) },
        'wrong-call',
        /approves call c-approved, not c-other/,
      ],
      [
        'for other arguments',
        { callId: 'c-args', arguments: { bin: 9 }, approval: approvalOf(tina, { callId: 'c-args', arguments: args }) },
        'wrong-digest',
        /other arguments/,
      ],
      [
        'signed by a key not allowed for this tool',
        { callId: 'c-mallory', arguments: args, approval: approvalOf(mallory, { callId: 'c-mallory', arguments: args }) },
        'key-not-allowed',
        /mallory .* may not approve or deny calls of drop_claw/,
      ],
      [
        'signed by an unknown key',
        { callId: 'c-eve', arguments: args, approval: approvalOf(eve, { callId: 'c-eve', arguments: args }) },
        'unknown-key',
        /unknown key/,
      ],
      [
        'a denial',
        {
          callId: 'c-denied',
          arguments: args,
          approval: approvalOf(tina, { callId: 'c-denied', arguments: args }, { approved: false, reason: 'no' }),
        },
        'denied',
        /denies the call/,
      ],
      [
        'expired (deadline + 30 s passed)',
        {
          callId: 'c-late',
          arguments: args,
          approval: approvalOf(tina, { callId: 'c-late', arguments: args }, { deadline: now - 30_001 }),
        },
        'expired',
        /deadline .* has passed/,
      ],
      [
        'no deadline quoted',
        {
          callId: 'c-undated',
          arguments: args,
          approval: approvalOf(tina, { callId: 'c-undated', arguments: args }, { deadline: undefined }),
        },
        'malformed',
        /deadline/,
      ],
    ]
    for (const [name, call, reason, message] of cases) {
      const reply = await callTool(attacker, d, call)
      expect(refusal(reply), name).toMatchObject({
        code: reason === 'missing' ? 'APPROVAL_REQUIRED' : 'APPROVAL_INVALID',
        reason,
        message: expect.stringMatching(message),
      })
      expect(reply.type === 'error' && reply.inReplyTo, name).toBe(call.callId)
    }
    // Nothing ran; every refusal was reported and audited on the bus, with why.
    expect(host.dropped).toEqual([])
    expect(host.refusals.map((r) => r.reason)).toEqual(cases.map(([, , reason]) => reason))
    await host.audit.settled()
    const stored = await readAudit({ bus: attacker, subjects: d.subjects, filter: { agentId: 'claw' } })
    const refused = stored.filter((e) => e.kind === 'tool.refused')
    expect(refused.map((e) => e.callId)).toEqual(cases.map(([, call]) => call.callId))
    expect(refused[6]).toMatchObject({
      toolName: 'drop_claw',
      shown: args,
      digest: callDigest('drop_claw', args),
      decision: 'refused',
      actor: 'system',
      reason: expect.stringMatching(/^APPROVAL_INVALID key-not-allowed \(approval req-\d+\): /),
    })
  })

  it('runs an approved call exactly once: a redelivery gets the same result, the same decision for another call is refused as a replay', async () => {
    const d = await deploy(nats)
    const release = deferred()
    const host = await enforcingHost(d, { gate: release.promise })
    const agent = await d.bus('agent')
    const call = { callId: 'c-drop', arguments: { bin: 3 } }
    const approval = approvalOf(tina, call)

    const first = callTool(agent, d, { ...call, approval })
    // Delivered again while the first still runs (a reconnect, a retried request): it waits for the same answer.
    await expect.poll(() => host.dropped).toEqual([3])
    const redelivered = callTool(agent, d, { ...call, approval })
    // The same decision presented with another call. With another call id the binding refuses it;
    // with the same call id under another idempotency key (another run, or any other key) it is a replay.
    const [otherCall, ...replays] = await Promise.all([
      callTool(agent, d, { callId: 'c-drop-2', arguments: { bin: 3 }, approval }),
      callTool(agent, d, { ...call, approval, runId: 'run-2' }),
      callTool(agent, d, { ...call, approval, key: 'another-key' }),
    ])
    expect(refusal(otherCall as Reply)).toMatchObject({ reason: 'wrong-call' })
    for (const reply of replays) {
      expect(refusal(reply)).toMatchObject({
        code: 'APPROVAL_INVALID',
        reason: 'replayed',
        message: expect.stringMatching(/already used/),
      })
    }
    release.resolve()
    expect(await first).toEqual({ v: 1, type: 'tool.result', callId: 'c-drop', output: 'dropped into bin 3' })
    expect(await redelivered).toEqual(await first)
    // And once it has finished, still the same answer, still not run again.
    expect(await callTool(agent, d, { ...call, approval })).toEqual(await first)
    expect(host.dropped).toEqual([3])
    expect(host.refusals.map((r) => r.reason).sort()).toEqual(['replayed', 'replayed', 'wrong-call'])
  })

  it('edited arguments: runs the edit the reviewer signed, and refuses the call as it was shown', async () => {
    const d = await deploy(nats)
    const host = await enforcingHost(d)
    const agent = await d.bus('agent')
    const shown = { callId: 'c-edit', arguments: { bin: 3 } }
    const edit = { bin: 4 }
    const approval = approvalOf(tina, shown, { arguments: edit, editedDigest: callDigest('drop_claw', edit) })

    const asShown = await callTool(agent, d, { ...shown, approval, key: 'k-shown' })
    expect(refusal(asShown)).toMatchObject({
      reason: 'wrong-digest',
      message: expect.stringMatching(/other \(edited\) arguments/),
    })
    // An edit whose signed digest is not the edit's: refused even with the arguments it names.
    const swapped = { ...approval, arguments: { bin: 5 } }
    expect(refusal(await callTool(agent, d, { ...shown, arguments: { bin: 5 }, approval: swapped }))).toMatchObject({
      reason: 'wrong-digest',
    })
    // The edit without its digest cannot be signed over, so it is not the reviewer's.
    const { editedDigest: _e, ...unsignedEdit } = approval
    expect(refusal(await callTool(agent, d, { ...shown, arguments: edit, approval: unsignedEdit }))).toMatchObject({
      reason: 'malformed',
    })
    const ran = await callTool(agent, d, { ...shown, arguments: edit, approval })
    expect(ran).toMatchObject({ type: 'tool.result', output: 'dropped into bin 4' })
    expect(host.dropped).toEqual([4])
  })

  it('judges the deadline by its own clock, with 30 s of tolerance for skew', async () => {
    const d = await deploy(nats)
    let offset = 0
    const clock: Clock = { ...systemClock, now: () => Date.now() + offset }
    const host = await enforcingHost(d, { clock })
    const agent = await d.bus('agent')
    const now = Date.now()
    // The host's clock is 25 s past the deadline: within the tolerance.
    offset = 25_000
    const inTime = { callId: 'c-skewed', arguments: { bin: 1 } }
    const reply = await callTool(agent, d, { ...inTime, approval: approvalOf(tina, inTime, { deadline: now }) })
    expect(reply).toMatchObject({ type: 'tool.result' })
    // 35 s past it: expired, by the host's clock although the sender's says otherwise.
    offset = 35_000
    const late = { callId: 'c-late', arguments: { bin: 2 } }
    const expired = await callTool(agent, d, { ...late, approval: approvalOf(tina, late, { deadline: now }) })
    expect(refusal(expired)).toMatchObject({ reason: 'expired' })
    expect(host.dropped).toEqual([1])
  })

  it('only gated calls need an approval: other tools, and a tool whose rule says this call needs none, run as sent', async () => {
    const d = await deploy(nats)
    const host = await enforcingHost(d)
    const agent = await d.bus('agent')
    expect(await callTool(agent, d, { toolName: 'move_claw', callId: 'c-move', arguments: { to: 'penguin' } })).toMatchObject({
      type: 'tool.result',
    })
    expect(await callTool(agent, d, { toolName: 'refund', callId: 'c-small', arguments: { credits: 2 } })).toMatchObject({
      type: 'tool.result',
      output: 'refunded 2',
    })
    // The rule runs on the host: a large refund needs an approval by a key allowed for `refund` (none is).
    expect(refusal(await callTool(agent, d, { toolName: 'refund', callId: 'c-big', arguments: { credits: 9 } }))).toMatchObject({
      code: 'APPROVAL_REQUIRED',
    })
    const approval = approvalOf(tina, { toolName: 'refund', callId: 'c-big', arguments: { credits: 9 } })
    expect(
      refusal(await callTool(agent, d, { toolName: 'refund', callId: 'c-big', arguments: { credits: 9 }, approval })),
    ).toMatchObject({ reason: 'key-not-allowed' })
    expect(host.moved).toEqual(['penguin'])
  })

  it('a pool remembers used approvals together: a replay is refused by another host and after a restart, a retry of the same call gets its answer', async () => {
    const d = await deploy(nats)
    const agent = await d.bus('agent')
    const first = await enforcingHost(d)
    const call = { callId: 'c-pool', arguments: { bin: 4 } }
    const approval = approvalOf(tina, call)
    const ran = await callTool(agent, d, { ...call, approval })
    expect(ran).toEqual({ v: 1, type: 'tool.result', callId: 'c-pool', output: 'dropped into bin 4' })
    // The host answers the caller while it records the answer in the pool's ledger: wait until
    // it is recorded (a host restarted after its call ended), or the retry below would race it.
    await expect.poll(() => recordedAnswer(agent, d, approval.requestId), { timeout: 10_000 }).toBe(true)

    // Another host of the pool (the same queue group) takes the calls from now on; the first one stops
    // (what a restart of it is too: a new process, a new connection, nothing in memory).
    const second = await enforcingHost(d)
    await first.stop()
    const replay = await callTool(agent, d, { ...call, approval, runId: 'run-2' })
    expect(refusal(replay)).toMatchObject({ code: 'APPROVAL_INVALID', reason: 'replayed' })
    // The honest retry of the same call (same idempotency key, e.g. after the agent resumed): its answer, not a second drop.
    expect(await callTool(agent, d, { ...call, approval })).toEqual(ran)
    expect(first.dropped).toEqual([4])
    expect(second.dropped).toEqual([])
    expect(second.refusals.map((r) => r.reason)).toEqual(['replayed'])
  })

  it('two live hosts, one decision presented for many calls at once: exactly one runs, whichever host took it', async () => {
    const d = await deploy(nats)
    const agent = await d.bus('agent')
    const hosts = [await enforcingHost(d), await enforcingHost(d)]
    const call = { callId: 'c-race', arguments: { bin: 5 } }
    const approval = approvalOf(tina, call)
    const replies = await Promise.all(
      Array.from({ length: 12 }, (_, i) => callTool(agent, d, { ...call, approval, runId: `run-${i}` })),
    )
    expect(replies.filter((reply) => reply.type === 'tool.result')).toHaveLength(1)
    expect(replies.filter((reply) => reply.type === 'error' && reply.error.details?.reason === 'replayed')).toHaveLength(11)
    expect(hosts.flatMap((host) => host.dropped)).toEqual([5])
  })

  it('a retry of a call still running on another host waits for its answer; the tool runs once', async () => {
    const d = await deploy(nats)
    const agent = await d.bus('agent')
    const release = deferred()
    const first = await enforcingHost(d, { gate: release.promise })
    const call = { callId: 'c-slow', arguments: { bin: 6 } }
    const approval = approvalOf(tina, call)
    const running = callTool(agent, d, { ...call, approval })
    await expect.poll(() => first.dropped, { timeout: 10_000 }).toEqual([6])
    // A host in another queue group gets the retry too (as well as the first host, which answers it
    // from memory): it must not run it, but wait for the answer the first host records.
    const second = await enforcingHost(d, { queue: 'another-pool' })
    const retried = callTool(agent, d, { ...call, approval })
    await expect.poll(() => second.host.running, { timeout: 10_000 }).toBe(1)
    release.resolve()
    expect(await running).toEqual({ v: 1, type: 'tool.result', callId: 'c-slow', output: 'dropped into bin 6' })
    expect(await retried).toEqual(await running)
    expect(second.dropped).toEqual([])
  })

  it('with the ledger off, a host remembers only in memory: the replay at another host runs (what the ledger prevents)', async () => {
    const d = await deploy(nats)
    const agent = await d.bus('agent')
    const first = await enforcingHost(d, { ledger: false })
    const call = { callId: 'c-off', arguments: { bin: 7 } }
    const approval = approvalOf(tina, call)
    expect(await callTool(agent, d, { ...call, approval })).toMatchObject({ type: 'tool.result' })
    const second = await enforcingHost(d, { ledger: false })
    await first.stop()
    expect(await callTool(agent, d, { ...call, approval, runId: 'run-2' })).toMatchObject({ type: 'tool.result' })
    expect([...first.dropped, ...second.dropped]).toEqual([7, 7])
  })

  it('refuses a decision that holds longer than the ledger keeps its entries (its replay could not be told then)', async () => {
    const d = await deploy(nats)
    const agent = await d.bus('agent')
    const bucket = `${usedApprovalsBucket(d.prefix)}_short`
    d.defer(() => deleteStream(agent, `KV_${bucket}`))
    const host = await enforcingHost(d, { ledger: { bucket, retentionMs: 60_000 } })
    const call = { callId: 'c-long', arguments: { bin: 8 } }
    const reply = await callTool(agent, d, { ...call, approval: approvalOf(tina, call, { deadline: Date.now() + 120_000 }) })
    expect(refusal(reply)).toMatchObject({ code: 'APPROVAL_INVALID', reason: 'outlives-ledger' })
    const inTime = { callId: 'c-short', arguments: { bin: 9 } }
    // 30 s of validity plus 30 s of skew tolerance: within the minute.
    const ok = await callTool(agent, d, { ...inTime, approval: approvalOf(tina, inTime, { deadline: Date.now() + 25_000 }) })
    expect(ok).toMatchObject({ type: 'tool.result' })
    expect(host.dropped).toEqual([9])
  })
})

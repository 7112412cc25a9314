/**
 * docs/protocol.md §8.6's test vector, checked against the reference host: the `tool.call` of §8.3
 * that carries an approval (signed with the §17.3 test key, approving an edit) runs under a policy
 * naming that key for `drop_claw`, and each variation the doc lists is refused with the reason the
 * doc gives. The host's clock is the doc's.
 */
import { readFileSync } from 'node:fs'
import { ApprovalInvalidError, ApprovalRequiredError, serveTools } from '@signalbox/actors'
import { type Clock, systemClock, tool } from '@signalbox/core'
import { createInProcessBus, createSubjects } from '@signalbox/core/bus'
import { decodeMessage, ErrorMessage, encodeMessage, type ToolCallMessage, ToolResultMessage } from '@signalbox/core/protocol'
import { describe, expect, it, onTestFinished } from 'vitest'
import { z } from 'zod'
import { IDEMPOTENCY_KEY_HEADER } from '../../src/tools/tool-host.ts'
import { createSigner, createTrustPolicy, newUserSeed, verifySignature } from '../../src/trust/index.ts'

const doc = readFileSync(new URL('../../../../docs/protocol.md', import.meta.url), 'utf8')
const section = doc.slice(doc.indexOf('### 8.6 Hosts that verify approvals'), doc.indexOf('## 9. Events'))
const vectorKey = /naming `(U[A-Z0-9]+)`/.exec(section)?.[1] as string
const hostTime = Number(/clock reads (\d+) runs/.exec(section)?.[1])
const lateTime = Number(/clock reads (\d+) \(the\s+decision's deadline \+ 30 s \+ 1 ms/.exec(section)?.[1])
const vector = [...doc.matchAll(/```json\n(\{\n {2}"v": 1,\n {2}"type": "tool\.call",[^`]+)```/g)]
  .map((m) => JSON.parse(m[1] as string) as ToolCallMessage)
  .find((call) => call.approval !== undefined) as ToolCallMessage

const Reply = z.discriminatedUnion('type', [ToolResultMessage, ErrorMessage])

describe('docs/protocol.md §8.6 test vector', () => {
  it('the approved call runs on the reference host; the variations the doc lists are refused as it says', async () => {
    expect(vector?.approval).toBeDefined()
    expect(verifySignature(vector.approval as Record<string, unknown>)).toEqual({ ok: true, signer: vectorKey })
    expect(lateTime).toBe((vector.approval?.deadline as number) + 30_000 + 1)

    let now = hostTime
    const clock: Clock = { ...systemClock, now: () => now }
    const dropped: number[] = []
    const hostOn = async (prefix: string) => {
      const subjects = createSubjects(prefix)
      const bus = createInProcessBus()
      const host = serveTools({
        bus,
        subjects,
        clock,
        approvals: { trust: createTrustPolicy({ keys: { [vectorKey]: 'tina' }, reviewers: { drop_claw: [vectorKey] } }) },
        tools: [
          tool({
            name: 'drop_claw',
            description: 'Drop the claw.',
            schema: z.object({ bin: z.number().int() }),
            needsApproval: true,
            execute: ({ bin }) => {
              dropped.push(bin)
              return `dropped into bin ${bin}`
            },
          }),
        ],
      })
      await host.ready
      onTestFinished(async () => {
        host.close()
        await bus.close()
      })
      return { bus, subjects }
    }
    let { bus, subjects } = await hostOn('vector.v1')
    const send = async (call: ToolCallMessage, key = `${call.runId}:${call.callId}`) => {
      const response = await bus.request(subjects.tool(call.toolName), encodeMessage(call), {
        timeoutMs: 2_000,
        headers: { [IDEMPOTENCY_KEY_HEADER]: key },
      })
      const decoded = decodeMessage(response.data, Reply)
      if (!decoded.ok) throw decoded.error
      const reply = decoded.value
      return reply.type === 'error' ? reply.error.details?.reason : reply.output
    }

    expect(await send({ ...vector, arguments: { bin: 3 } })).toBe('wrong-digest')
    expect(await send({ ...vector, callId: 'call_2' })).toBe('wrong-call')
    expect(await send(vector)).toBe('dropped into bin 4')
    expect(await send(vector, 'another-key')).toBe('replayed')
    // A host that has not seen the decision, later.
    ;({ bus, subjects } = await hostOn('vector2.v1'))
    now = lateTime
    expect(await send({ ...vector, deadline: lateTime + 60_000 })).toBe('expired')
    // One millisecond earlier, on a third host, still in time (the tolerance is inclusive).
    ;({ bus, subjects } = await hostOn('vector3.v1'))
    now = lateTime - 1
    expect(await send({ ...vector, deadline: lateTime + 60_000 })).toBe('dropped into bin 4')
    expect(dropped).toEqual([4, 4])
  })

  it('the messages the model reads are the ones the doc shows', () => {
    expect(section).toContain(
      `| \`APPROVAL_REQUIRED\` | \`missing\`         | \`${new ApprovalRequiredError('<tool>').message}\` |`,
    )
    const reason = '<reason>' as ConstructorParameters<typeof ApprovalInvalidError>[1]
    expect(section).toContain(`\`${new ApprovalInvalidError('<tool>', reason, '<why>').message}\``)
  })

  it('a decision signs its deadline and the digest of its edit, and an edit cannot go unsigned', () => {
    const signed = createSigner(newUserSeed()).sign(vector.approval as Parameters<ReturnType<typeof createSigner>['sign']>[0])
    expect(verifySignature(signed).ok).toBe(true)
    for (const [field, value] of Object.entries({ deadline: 1_767_999_999_000, editedDigest: `sha256:${'1'.repeat(64)}` })) {
      expect(verifySignature({ ...signed, [field]: value }), field).toMatchObject({ ok: false, code: 'bad-signature' })
    }
    // `arguments` rides outside the signed bytes, bound through `editedDigest`: without it, nothing covers the edit.
    const { editedDigest: _e, ...bare } = signed
    expect(verifySignature(bare)).toMatchObject({ ok: false, code: 'malformed', reason: expect.stringContaining('editedDigest') })
    const { signer: _s, signature: _sig, ...fields } = bare
    expect(() => createSigner(newUserSeed()).sign(fields)).toThrow(/editedDigest is missing/)
  })
})

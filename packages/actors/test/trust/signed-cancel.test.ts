/**
 * A parent agent's signed cancel of its child run, across hosts over real NATS: the child's host
 * requires signed cancels (its trust policy lists the parent host's key in `controllers`). Cancels
 * that are unsigned, or signed by a key the policy does not list, are refused and the child runs
 * on; cancelling the parent run makes its host send the cancel signed with its key, and the child
 * stops at once (long before its lease would end it).
 */
import { sendControl } from '@signalbox/actors'
import { createSigner, createTrustPolicy, newUserSeed } from '@signalbox/actors/trust'
import { RunFailedError } from '@signalbox/core'
import { describe, expect, it } from 'vitest'
import { eventually, ofType, parentOfBlockedChild, topology, within } from '../system/harness.ts'

describe('a parent cancels its remote child with a signed cancel (nats)', () => {
  it('forged cancels are refused; the parent host’s signed cancel stops the child', async () => {
    const parentKey = createSigner(newUserSeed())
    const operator = createSigner(newUserSeed())
    const mallory = createSigner(newUserSeed())
    const childTrust = createTrustPolicy({
      keys: { [parentKey.publicKey]: 'parent host', [operator.publicKey]: 'operator' },
      controllers: [parentKey.publicKey],
    })
    // A lease far longer than the test: only the signed cancel can stop the child in time.
    const t = await topology('nats', { leaseMs: 120_000, parentSigner: parentKey, childTrust })
    const { child, blocking } = await parentOfBlockedChild(t)

    const controller = new AbortController()
    const running = t.parent.run('parent', 'Go.', { signal: controller.signal }).catch((error: unknown) => error)
    const context = await within(blocking.started.promise, 10_000, 'the child’s tool starts')

    // Anyone else on the bus: unsigned, signed by an unknown key, signed by a named key that may not cancel.
    const attacker = await t.deployment?.bus('attacker')
    if (!attacker) throw new Error('no bus')
    const cancel = { type: 'control.cancel' as const, runId: context.runId, from: 'parent-host' }
    for (const signer of [undefined, mallory, operator]) {
      await expect(
        sendControl({ bus: attacker, subjects: t.subjects, agentId: 'child', request: cancel, ...(signer ? { signer } : {}) }),
      ).rejects.toMatchObject({ code: 'CONTROL_NOT_AUTHORIZED' })
    }
    expect(child.agent.runs.get(context.runId)).toBeDefined()
    expect(ofType(child.events, 'run.end')).toEqual([])

    // The parent is cancelled: its host signs the child's cancel with its key, and the child stops.
    controller.abort('the person changed their mind')
    const failure = await within(running, 10_000, 'the parent ends')
    expect(failure).toBeInstanceOf(RunFailedError)
    expect((failure as RunFailedError).result.status).toBe('cancelled')
    await within(blocking.aborted.promise, 10_000, 'the child’s tool signal aborts')
    await eventually(() => ofType(child.events, 'run.end').length === 1, 10_000, 'the child run ends')
    expect(ofType(child.events, 'run.end')[0]).toMatchObject({ status: 'cancelled', runId: context.runId })
    expect(ofType(child.events, 'run.end')[0]?.error?.message).not.toContain('lease')
  }, 40_000)
})

/**
 * The console with the agents' keys: an approval request signed by a trusted agent key is shown
 * marked verified (with the policy's name for the key); one unsigned or signed by another key is
 * never shown, so nobody approves a request an agent did not make. Without keys, requests are shown
 * marked unverified.
 */
import { remoteReviewer } from '@signalbox/actors'
import { createSigner, newUserSeed } from '@signalbox/actors/trust'
import type { ApprovalRequest } from '@signalbox/core'
import { InProcessBus } from '@signalbox/core/bus'
import { callDigest } from '@signalbox/core/protocol'
import { describe, expect, it, onTestFinished } from 'vitest'
import { createConsoleHub } from '../src/index.ts'

function request(n: number): ApprovalRequest {
  const now = Date.now()
  return {
    requestId: `request_${n}`,
    agentId: 'bank',
    runId: 'run_1',
    runPath: [],
    callId: `call_${n}`,
    toolName: 'pay',
    arguments: { to: 'ACME', amount: n },
    digest: callDigest('pay', { to: 'ACME', amount: n }),
    deadline: now + 60_000,
    requestedAt: now,
  }
}

async function until<T>(check: () => T | undefined): Promise<T> {
  for (let i = 0; i < 300; i++) {
    const value = check()
    if (value !== undefined) return value
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  throw new Error('condition not met')
}

describe('createConsoleHub with agent keys', () => {
  it('shows requests signed by a trusted agent key as verified and never shows the others', async () => {
    const bus = new InProcessBus()
    const agentKey = createSigner(newUserSeed())
    const otherKey = createSigner(newUserSeed())
    const refused: string[] = []
    const hub = createConsoleHub({
      bus,
      reviewer: 'tina',
      agentKeys: [agentKey.publicKey],
      onRefused: (id, reason) => refused.push(`${id}: ${reason}`),
    })
    onTestFinished(() => hub.close())
    await hub.ready
    const stop = new AbortController()
    const signal = stop.signal
    const unsigned = remoteReviewer({ bus })
    const forger = remoteReviewer({ bus, signer: otherKey })
    const agent = remoteReviewer({ bus, signer: agentKey })
    onTestFinished(() => {
      stop.abort()
      unsigned.close()
      forger.close()
      agent.close()
    })
    void unsigned.review(request(1), { signal }).catch(() => {})
    void forger.review(request(2), { signal }).catch(() => {})
    const decision = agent.review(request(3), { signal })

    const item = await until(() => hub.snapshot().inbox.find((i) => i.id === 'request_3'))
    expect(item).toMatchObject({
      kind: 'approval',
      origin: { verified: true, name: 'agent key 1', signer: agentKey.publicKey },
    })
    // The two others were refused unseen (reported, not shown).
    await until(() => (refused.length >= 2 ? true : undefined))
    expect(hub.snapshot().inbox.map((i) => i.id)).toEqual(['request_3'])
    expect(refused.sort()).toEqual([
      expect.stringMatching(/^request_1: not from a trusted agent \(unsigned/),
      expect.stringMatching(/^request_2: not from a trusted agent \(unknown-key/),
    ])

    expect(hub.decide('request_3', { approved: true })).toEqual({ ok: true })
    await expect(decision).resolves.toMatchObject({ approved: true, reviewer: 'tina' })
  })

  it('without keys, shows requests marked unverified', async () => {
    const bus = new InProcessBus()
    const hub = createConsoleHub({ bus, reviewer: 'tina' })
    onTestFinished(() => hub.close())
    await hub.ready
    const agent = remoteReviewer({ bus })
    onTestFinished(() => agent.close())
    void agent.review(request(1), { signal: AbortSignal.timeout(10_000) }).catch(() => {})
    const item = await until(() => hub.snapshot().inbox[0])
    expect(item).toMatchObject({ origin: { verified: false, reason: expect.stringContaining('no trust policy') } })
  })
})

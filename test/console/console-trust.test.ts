/**
 * The console with the agents' keys, in real headless Chromium over NATS: a request the agent
 * signed is shown marked verified (the policy's name for the key); a request nobody trusted signed
 * is never shown there. A console without keys shows requests marked NOT verified.
 */
import { remoteReviewer } from '@signalbox/actors'
import { createSigner, newUserSeed } from '@signalbox/actors/trust'
import type { ApprovalRequest } from '@signalbox/core'
import { callDigest } from '@signalbox/core/protocol'
import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { launchChromium } from '../inspect/support.ts'
import { type Deployment, deploy, openPage, screenshot } from './support.ts'

let browser: Browser
let deployment: Deployment

beforeAll(async () => {
  ;[browser, deployment] = await Promise.all([launchChromium(), deploy()])
})

afterAll(async () => {
  await browser?.close()
  await deployment?.close()
})

function request(n: number): ApprovalRequest {
  const now = Date.now()
  return {
    requestId: `request_${n}_${now}`,
    agentId: 'claw',
    runId: 'run_1',
    runPath: [],
    callId: `call_${n}`,
    toolName: 'drop_claw',
    arguments: { bin: n },
    digest: callDigest('drop_claw', { bin: n }),
    deadline: now + 60_000,
    requestedAt: now,
  }
}

describe('signalbox console with agent keys', () => {
  it('marks signed requests verified, hides unverified ones, and marks them NOT verified without keys', async () => {
    const agentKey = createSigner(newUserSeed())
    const refused: string[] = []
    const trusting = await deployment.openConsole('tina', {
      agentKeys: [agentKey.publicKey],
      onRefused: (id, reason) => refused.push(`${id}: ${reason}`),
    })
    const plain = await deployment.openConsole('bob')
    const trustingPage = await openPage(await browser.newPage({ viewport: { width: 1500, height: 1000 } }), trusting.url)
    const plainPage = await openPage(await browser.newPage({ viewport: { width: 1500, height: 1000 } }), plain.url)

    const stop = new AbortController()
    const signed = remoteReviewer({ bus: deployment.bus, subjects: deployment.subjects, signer: agentKey })
    const unsigned = remoteReviewer({ bus: deployment.bus, subjects: deployment.subjects })
    try {
      const forged = request(1)
      const real = request(2)
      void unsigned.review(forged, { signal: stop.signal }).catch(() => {})
      const decision = signed.review(real, { signal: stop.signal })

      const card = trustingPage.locator(`.item[data-id="${real.requestId}"]`)
      await card.waitFor()
      expect(await card.locator('.origin.verified').textContent()).toBe(`verified: signed by agent key 1 (${agentKey.publicKey})`)
      await screenshot(trustingPage, 'inbox-verified')
      // The unsigned request reached this console and was refused unseen.
      await expect.poll(() => refused.length, { timeout: 10_000 }).toBe(1)
      expect(refused).toEqual([expect.stringMatching(new RegExp(`^${forged.requestId}: not from a trusted agent \\(unsigned`))])
      expect(await trustingPage.locator(`.item[data-id="${forged.requestId}"]`).count()).toBe(0)

      // The console without keys shows both, neither verified.
      const plainForged = plainPage.locator(`.item[data-id="${forged.requestId}"]`)
      await plainForged.waitFor()
      expect(await plainForged.locator('.origin.unverified').textContent()).toMatch(/^NOT verified: no trust policy/)
      await plainPage.locator(`.item[data-id="${real.requestId}"] .origin.unverified`).waitFor()

      await card.locator('button.approve').click()
      await expect(decision).resolves.toMatchObject({ approved: true, reviewer: 'tina' })
    } finally {
      stop.abort()
      signed.close()
      unsigned.close()
    }
  })
})

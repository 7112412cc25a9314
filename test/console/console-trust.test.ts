/**
 * The console with the agents' keys, in real headless Chromium over NATS: a request the agent
 * signed is shown marked verified (the policy's name for the key); a request nobody trusted signed
 * is never shown there. A console without keys shows requests, and says once that they are not verified. With a trust
 * policy, a forged answer does not take a question out of the inbox; the console's signed answer
 * is the one the agent accepts.
 */
import { busAuditLog, remoteAnswerer, remoteReviewer } from '@signalbox/actors'
import { createSigner, createTrustPolicy, newUserSeed } from '@signalbox/actors/trust'
import type { ApprovalRequest, Question } from '@signalbox/core'
import { callDigest } from '@signalbox/core/protocol'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { chromiumForFile, type TestBrowser } from '../inspect/support.ts'
import { type Deployment, deploy, openPage, screenshot } from './support.ts'

let browser: TestBrowser
let deployment: Deployment

beforeAll(async () => {
  ;[browser, deployment] = await Promise.all([chromiumForFile(), deploy()])
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
      expect(await card.locator('.origin.verified').textContent()).toBe(
        `✔ verified: signed by agent key 1 (${agentKey.publicKey})`,
      )
      // Every request shown here is verified: no warning on the page.
      expect(await trustingPage.locator('#trust-notice').isHidden()).toBe(true)
      await screenshot(trustingPage, 'inbox-verified')
      // The unsigned request reached this console and was refused unseen.
      await expect.poll(() => refused.length, { timeout: 10_000 }).toBe(1)
      expect(refused).toEqual([expect.stringMatching(new RegExp(`^${forged.requestId}: not from a trusted agent \\(unsigned`))])
      expect(await trustingPage.locator(`.item[data-id="${forged.requestId}"]`).count()).toBe(0)

      // The console without keys shows both, neither verified, and says so once for the page.
      const plainForged = plainPage.locator(`.item[data-id="${forged.requestId}"]`)
      await plainForged.waitFor()
      expect(await plainForged.getAttribute('data-verified')).toBe('false')
      await plainPage.locator(`.item[data-id="${real.requestId}"][data-verified="false"]`).waitFor()
      expect(await plainPage.locator('#trust-notice').textContent()).toMatch(/^Requests here are not verified \(no trust policy/)

      await card.locator('button.approve').click()
      await expect(decision).resolves.toMatchObject({ approved: true, reviewer: 'tina' })
    } finally {
      stop.abort()
      signed.close()
      unsigned.close()
    }
  })

  it('shows a refused decision in the audit under who provably sent it, with the name it claimed', async () => {
    const tina = createSigner(newUserSeed())
    const mallory = createSigner(newUserSeed())
    const policy = createTrustPolicy({
      keys: { [tina.publicKey]: 'tina', [mallory.publicKey]: 'mallory' },
      reviewers: [tina.publicKey],
    })
    const opened = await deployment.openConsole('sam')
    const page = await openPage(await browser.newPage({ viewport: { width: 1500, height: 1000 } }), opened.url)
    const { bus, subjects } = deployment
    // No agent here: the reviewer records the refusal in the audit trail on the bus itself.
    const reviewer = remoteReviewer({ bus, subjects, trust: policy, audit: busAuditLog({ bus, subjects }) })
    const stop = new AbortController()
    try {
      const pending = request(7)
      void reviewer.review(pending, { signal: stop.signal }).catch(() => {})
      await page.locator(`.item[data-id="${pending.requestId}"]`).waitFor()
      // Mallory signs an approval with her own key and names tina.
      const forged = mallory.sign({
        v: 1,
        type: 'approval.decision',
        requestId: pending.requestId,
        callId: pending.callId,
        digest: pending.digest,
        approved: true,
        reviewer: 'tina',
        decidedAt: Date.now(),
      })
      await bus.durablePublish(subjects.approvalDecisions('claw'), JSON.stringify(forged), {
        msgId: `mallory-${pending.requestId}`,
      })
      await page.locator('nav a[data-tab="audit"]').click()
      const row = page.locator('#audit tr[data-kind="approval.rejected"]', { hasText: 'mallory' })
      await row.waitFor()
      expect(await row.locator('.actor').textContent()).toBe('mallory (claimed tina)')
      expect(await row.locator('.reason').textContent()).toMatch(/^key-not-allowed: mallory/)
    } finally {
      stop.abort()
      reviewer.close()
    }
  })

  it('keeps a question after a forged answer; the policy’s answerer settles others; its signed answer is accepted', async () => {
    const tina = createSigner(newUserSeed())
    const bob = createSigner(newUserSeed())
    // The agents' policy, given to the console as it is (no "agents": requests are not checked).
    const policy = createTrustPolicy({
      keys: { [tina.publicKey]: 'tina', [bob.publicKey]: 'bob' },
      answerers: [tina.publicKey, bob.publicKey],
    })
    const opened = await deployment.openConsole('tina', { trust: policy, signer: tina })
    const page = await openPage(await browser.newPage({ viewport: { width: 1500, height: 1000 } }), opened.url)
    const { bus, subjects } = deployment
    const agent = remoteAnswerer({ bus, subjects, trust: policy, audit: false })
    const stop = new AbortController()
    try {
      const now = Date.now()
      const question = (n: number): Question => ({
        questionId: `question_${n}_${now}`,
        agentId: 'claw',
        runId: 'run_q',
        runPath: [],
        callId: `ask_${n}`,
        question: `Which bin, ${n}?`,
        deadline: now + 60_000,
        askedAt: now,
      })
      const [first, second] = [question(1), question(2)]
      const answered = agent.answer(first, { signal: stop.signal })
      void agent.answer(second, { signal: stop.signal }).catch(() => {})
      const card = (q: Question) => page.locator(`.item.question[data-id="${q.questionId}"]`)
      await card(first).waitFor()
      await card(second).waitFor()
      const reply = (q: Question, by: string) => ({
        v: 1,
        type: 'answer' as const,
        questionId: q.questionId,
        answer: 'bin 1',
        answeredBy: by,
        answeredAt: Date.now(),
      })
      // Anyone on the bus answers the first "as tina", unsigned; then bob, whom the policy allows, the second.
      const publish = (message: object, id: string) =>
        bus.durablePublish(subjects.answers('claw'), JSON.stringify(message), { msgId: `${id}-${now}` })
      await publish(reply(first, 'tina'), 'forged')
      await publish(bob.sign(reply(second, 'bob')), 'bob')
      await card(second).waitFor({ state: 'detached' })
      // Settled after the forgery was read: the first question is still in the inbox.
      expect(await card(first).count()).toBe(1)

      await card(first).locator('input.answer-text').fill('bin 7')
      await card(first).locator('button.answer').click()
      await expect(answered).resolves.toMatchObject({ answer: 'bin 7', answeredBy: 'tina' })
    } finally {
      stop.abort()
      agent.close()
    }
  })
})

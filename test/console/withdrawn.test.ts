/**
 * Two consoles in real headless Chromium, a correction from one of them while a call waits for
 * approval, and a run that goes on: the steered call's card leaves both inboxes at once, withdrawn
 * by the correction's sender (not ~7 s later as denied by `system`, orphaned), while the run's next
 * request is still shown; a decision on the withdrawn request is refused (409 NOT_PENDING) by both
 * consoles, and nothing reaches the agent.
 */
import { busAuditLog, connectAgent, remoteReviewer } from '@signalbox/actors'
import { type AgentEvent, type ApprovalRequest, createAgent, OpenAIProvider, tool } from '@signalbox/core'
import { startScriptedModelServer } from '@signalbox/core/testing'
import type { Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { chromiumForFile, type TestBrowser } from '../inspect/support.ts'
import { type Deployment, deploy, openPage } from './support.ts'

let browser: TestBrowser
let deployment: Deployment

beforeAll(async () => {
  ;[browser, deployment] = await Promise.all([chromiumForFile(), deploy()])
})

afterAll(async () => {
  await browser?.close()
  await deployment?.close()
})

/** What a click on Approve sends, from the page (with its token): the HTTP status and the body. */
function approveFrom(page: Page, requestId: string): Promise<{ status: number; body: Record<string, unknown> }> {
  return page.evaluate(async (id) => {
    const token = document.querySelector('meta[name="signalbox-token"]')?.getAttribute('content') ?? ''
    const response = await fetch(`/api/approvals/${encodeURIComponent(id)}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-signalbox-console': token },
      body: JSON.stringify({ approved: true }),
    })
    return { status: response.status, body: (await response.json()) as Record<string, unknown> }
  }, requestId)
}

describe('the console after a correction', () => {
  it('withdraws the steered call from every console at once, by whom; a click on it is refused everywhere', async () => {
    const sam = await deployment.openConsole('sam')
    const tina = await deployment.openConsole('tina')
    const samPage = await openPage(await browser.newPage({ viewport: { width: 1500, height: 1000 } }), sam.url)
    const tinaPage = await openPage(await browser.newPage({ viewport: { width: 1500, height: 1000 } }), tina.url)
    const { bus, subjects } = deployment
    const model = await startScriptedModelServer({
      scripts: {
        claw: [
          { toolCalls: [{ name: 'drop_claw', arguments: { bin: 9 } }] },
          // After the correction the run goes on: it asks for another drop, which waits.
          { toolCalls: [{ name: 'drop_claw', arguments: { bin: 4 } }] },
          { content: 'Dropped into bin 4.' },
        ],
      },
    })
    const dropped: number[] = []
    const reviewer = remoteReviewer({ bus, subjects, audit: busAuditLog({ bus, subjects }) })
    const agent = createAgent({
      id: 'claw',
      provider: new OpenAIProvider({ baseURL: model.url, apiKey: 'console-test', model: 'claw' }),
      tools: [
        tool({
          name: 'drop_claw',
          description: 'Drop the claw. Irreversible.',
          schema: z.object({ bin: z.number() }),
          needsApproval: true,
          execute: ({ bin }) => {
            dropped.push(bin)
            return `dropped into bin ${bin}`
          },
        }),
      ],
      reviewer,
      audit: busAuditLog({ bus, subjects }),
      approvalTimeoutMs: 60_000,
    })
    const requests: ApprovalRequest[] = []
    const events: AgentEvent[] = []
    agent.on('*', (event) => {
      events.push(event)
      if (event.type === 'approval.requested') requests.push(event.request)
    })
    const connection = connectAgent(agent, { bus, subjects })
    try {
      await connection.ready
      const handle = agent.start('Get the penguin.')
      await expect.poll(() => requests.length, { timeout: 10_000 }).toBe(1)
      const first = requests[0] as ApprovalRequest
      const samCard = samPage.locator(`.item[data-id="${first.requestId}"]`)
      await samCard.waitFor()
      await tinaPage.locator(`.item[data-id="${first.requestId}"]`).waitFor()

      // Sam steers from the card: the correction cancels the pending call.
      await samCard.locator('input.steer-text').fill('No, wait! Leave bin 9 alone.')
      await samCard.locator('button.steer').click()
      // The run goes on, with its next request...
      await expect.poll(() => requests.length, { timeout: 10_000 }).toBe(2)
      const second = requests[1] as ApprovalRequest
      for (const page of [samPage, tinaPage]) {
        await page.locator(`.item[data-id="${second.requestId}"]`).waitFor()
        // ...and the steered call left every inbox, withdrawn by sam (never denied by system as orphaned).
        await page.locator(`#settled li[data-id="${first.requestId}"]`, { hasText: 'withdrawn by sam' }).waitFor()
        expect(await page.locator(`.item[data-id="${first.requestId}"]`).count()).toBe(0)
        expect(await page.locator(`#settled li[data-id="${first.requestId}"]`).textContent()).not.toMatch(/system|orphaned/)
      }
      // The run is still running: it was not its end that took the card away.
      expect(events.some((e) => e.type === 'run.end')).toBe(false)

      // A click on the withdrawn request, on either console: refused, nothing sent.
      for (const page of [tinaPage, samPage]) {
        const click = await approveFrom(page, first.requestId)
        expect(click.status).toBe(409)
        expect(click.body).toMatchObject({
          error: { code: 'NOT_PENDING', message: 'already settled: withdrawn by sam' },
          settled: { outcome: 'withdrawn', by: 'sam' },
        })
      }

      // Tina approves the second drop; it runs once, and the first never ran.
      await tinaPage.locator(`.item[data-id="${second.requestId}"] button.approve`).click()
      await expect(handle.result).resolves.toMatchObject({ output: 'Dropped into bin 4.' })
      expect(dropped).toEqual([4])
      expect(events.filter((e) => e.type === 'approval.rejected')).toEqual([])
      await samPage.locator(`#settled li[data-id="${second.requestId}"]`, { hasText: 'approved by tina' }).waitFor()
    } finally {
      connection.close()
      reviewer.close()
      await model.close()
      await samPage.close()
      await tinaPage.close()
    }
  })
})

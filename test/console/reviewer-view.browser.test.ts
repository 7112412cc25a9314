/**
 * What a reviewer sees, in real headless Chromium at 1400 px: the card says what the tool does and
 * what led to the call (the whole conversation with contents allowed); the run view fits the
 * window; the chart reads as the loop (exits collapsed, edges labelled, labels clear of the
 * states) with the state in words; unsigned requests are flagged once for the page; Cancel stands
 * apart from Deny and is not coloured like it.
 */
import { busAuditLog, connectAgent, remoteReviewer } from '@signalbox/actors'
import { createBusInspector } from '@signalbox/actors/inspect'
import { type ApprovalRequest, createAgent, OpenAIProvider, tool } from '@signalbox/core'
import { type ScriptedModelServer, startScriptedModelServer } from '@signalbox/core/testing'
import type { Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { chromiumForFile, type TestBrowser } from '../inspect/support.ts'
import { type Deployment, deploy, openPage, screenshot } from './support.ts'

const WIDTH = 1400
const INPUT = 'Pay ACME the 250 we owe them for invoice 7.'
const SAID = 'Invoice 7 is 250 and unpaid: paying ACME now.'
const DESCRIPTION = 'Pay someone from the company account. Irreversible.'

let browser: TestBrowser
let deployment: Deployment
let model: ScriptedModelServer
const closers: (() => unknown)[] = []

beforeAll(async () => {
  ;[browser, deployment, model] = await Promise.all([
    chromiumForFile(),
    deploy(),
    startScriptedModelServer({
      // One model per test (each run plays its own script), all the same conversation.
      scripts: Object.fromEntries(
        ['card', 'contents', 'runs', 'unsigned-1', 'unsigned-2', 'cancel', 'granted', 'denied', 'forged'].map((name) => [
          `bank-${name}`,
          [
            { content: 'Let me look at invoice 7.', toolCalls: [{ name: 'lookup', arguments: { invoice: 7 } }] },
            { content: SAID, toolCalls: [{ name: 'pay', arguments: { to: 'ACME', amount: 250 } }] },
            { content: 'Paid.' },
          ],
        ]),
      ),
    }),
  ])
})

afterAll(async () => {
  for (const close of closers.reverse()) await close()
  await browser?.close()
  await model?.close()
  await deployment?.close()
})

/** The bank agent on the bus, started on `name`'s script; resolves with its approval request. */
async function bankRun(name: string): Promise<{ request: ApprovalRequest; runId: string }> {
  const { bus, subjects } = deployment
  const audit = busAuditLog({ bus, subjects })
  const reviewer = remoteReviewer({ bus, subjects, audit })
  const pay = tool({
    name: 'pay',
    description: DESCRIPTION,
    schema: z.object({ to: z.string(), amount: z.number() }),
    needsApproval: true,
    execute: () => 'paid',
  })
  const lookup = tool({
    name: 'lookup',
    description: 'Look an invoice up.',
    schema: z.object({ invoice: z.number() }),
    execute: () => 'invoice 7: 250, unpaid',
  })
  const agent = createAgent({
    id: 'bank',
    provider: new OpenAIProvider({ baseURL: model.url, apiKey: 'console-test', model: `bank-${name}` }),
    tools: [lookup, pay],
    reviewer,
    audit,
    approvalTimeoutMs: 120_000,
    inspect: createBusInspector({ bus, subjects }).inspect,
  })
  const connection = connectAgent(agent, { bus, subjects })
  await connection.ready
  const requested = new Promise<ApprovalRequest>((resolve) => {
    const off = agent.on('approval.requested', (event) => {
      off()
      resolve(event.request)
    })
  })
  const handle = agent.start(INPUT)
  handle.result.catch(() => {})
  closers.push(
    () => handle.cancel('test over'),
    () => connection.close(),
    () => reviewer.close(),
  )
  return { request: await requested, runId: handle.runId }
}

async function newPage(url: string): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: WIDTH, height: 900 } })
  return openPage(page, url)
}

/** Elements whose box reaches past the window's right edge, and the page's own width. */
function overflow(page: Page) {
  return page.evaluate(() => ({
    scrollWidth: document.documentElement.scrollWidth,
    past: [...document.querySelectorAll('body *')]
      .filter((e) => e.getBoundingClientRect().right > window.innerWidth + 0.5)
      .map((e) => `${e.tagName.toLowerCase()}.${e.getAttribute('class') ?? ''}`),
  }))
}

describe('the console, as a reviewer decides from it', () => {
  it('shows on the card what the tool does and what led to the call; the conversation only with contents', async () => {
    const opened = await deployment.openConsole('tina')
    const page = await newPage(opened.url)
    const { request } = await bankRun('card')
    expect(request.context).toEqual({ input: INPUT, lastText: SAID })
    const card = page.locator(`.item[data-id="${request.requestId}"]`)
    await card.waitFor()
    expect(await card.locator('.tool-description').textContent()).toBe(DESCRIPTION)
    expect(await card.locator('.context-input').textContent()).toBe(INPUT)
    expect(await card.locator('.context-last-text').textContent()).toBe(SAID)
    expect(JSON.parse((await card.locator('pre.arguments').textContent()) ?? '')).toEqual({ to: 'ACME', amount: 250 })
    // Private by default: no conversation on the card.
    expect(await card.locator('details.conversation').isHidden()).toBe(true)
    await screenshot(page, 'reviewer-card')
    await page.close()
  })

  it('with contents allowed, the card opens onto the whole conversation so far', async () => {
    const opened = await deployment.openConsole('tina', { includeContents: true })
    const page = await newPage(opened.url)
    const { request } = await bankRun('contents')
    const card = page.locator(`.item[data-id="${request.requestId}"]`)
    const conversation = card.locator('details.conversation')
    await conversation.waitFor()
    await conversation.locator('summary').click()
    const messages = conversation.locator('li')
    // The run's input, the lookup the model asked for, its result, and the reply asking for the payment.
    await expect.poll(() => messages.count()).toBe(4)
    const texts = await messages.allTextContents()
    expect(texts.some((text) => text.startsWith('user') && text.includes(INPUT))).toBe(true)
    expect(texts.some((text) => text.startsWith('tool') && text.includes('invoice 7: 250, unpaid'))).toBe(true)
    expect(texts.at(-1)).toContain(SAID)
    expect(texts.at(-1)).toContain('→ pay({"to":"ACME","amount":250})')
    await screenshot(page, 'reviewer-card-conversation')
    await page.close()
  })

  it('the run view fits 1400 px; the chart reads as the loop, labelled, exits collapsed, the state in words', async () => {
    const opened = await deployment.openConsole('tina')
    const page = await newPage(`${opened.url}/#runs`)
    const { runId } = await bankRun('runs')
    await page.locator(`#run-tree a[data-run="${runId}"]`).click()
    await page.locator('.chart g.node.active[data-state="running.turn.toolCalls.awaitingApproval"]').waitFor()
    await screenshot(page, 'reviewer-run-view')

    // Nothing past the window: the chart scales to its column, Steer, Cancel and the events are in view.
    const { scrollWidth, past } = await overflow(page)
    expect(past).toEqual([])
    expect(scrollWidth).toBeLessThanOrEqual(WIDTH)
    for (const selector of ['#run-detail button.steer', '#run-detail button.cancel', '#run-detail .events', '.chart svg']) {
      const box = await page.locator(selector).boundingBox()
      expect(box, selector).not.toBeNull()
      expect((box?.x ?? 0) + (box?.width ?? 0), selector).toBeLessThanOrEqual(WIDTH)
    }

    // The state in words, the machine's path beside it.
    expect(await page.locator('.state-words').textContent()).toBe('waiting for your approval of pay')
    expect(await page.locator('.run-state').textContent()).toBe('running.turn.toolCalls.awaitingApproval')

    // One edge into failed, from the running state (not one per wait), and cancel from running and idle.
    const exits = await page
      .locator('.chart g.edge[data-to="failed"]')
      .evaluateAll((edges) => edges.map((e) => ({ from: e.getAttribute('data-from'), exit: e.classList.contains('exit') })))
    expect(exits).toEqual([{ from: 'running', exit: true }])
    const cancels = await page
      .locator('.chart g.edge[data-to="cancelled"]')
      .evaluateAll((edges) => edges.map((e) => e.getAttribute('data-from')).sort())
    expect(cancels).toEqual(['idle', 'running'])

    // Edges drawn with their events, each label clear of every state.
    const decision = page.locator(
      '.chart g.edge[data-from="running.turn.toolCalls.awaitingApproval"][data-to="running.turn.toolCalls.executingTool"] text.label',
    )
    expect(await decision.textContent()).toBe('approval.decision')
    const placement = await page.evaluate(() => {
      const boxes = [...document.querySelectorAll('.chart g.node.leaf > rect')].map((r) => r.getBoundingClientRect())
      const labels = [...document.querySelectorAll('.chart g.edge rect.label-bg')].map((r) => r.getBoundingClientRect())
      const hit = (a: DOMRect, b: DOMRect) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom
      return { labels: labels.length, covering: labels.filter((label) => boxes.some((box) => hit(label, box))).length }
    })
    expect(placement.labels).toBeGreaterThan(20)
    expect(placement.covering).toBe(0)
    await page.close()
  })

  it('says once for the page that requests are not verified, not on every card', async () => {
    const opened = await deployment.openConsole('tina')
    const page = await newPage(opened.url)
    const first = await bankRun('unsigned-1')
    const second = await bankRun('unsigned-2')
    await page.locator(`.item[data-id="${first.request.requestId}"]`).waitFor()
    await page.locator(`.item[data-id="${second.request.requestId}"]`).waitFor()
    expect(await page.locator('.item[data-verified="false"]').count()).toBeGreaterThanOrEqual(2)
    const notice = page.locator('#trust-notice')
    expect(await notice.isVisible()).toBe(true)
    expect(await notice.textContent()).toMatch(/^Requests here are not verified \(no trust policy/)
    // Said once: nothing on the cards.
    expect(await page.getByText(/not verified/i).count()).toBe(1)
    expect(await page.locator('.item .origin').count()).toBe(0)
    await screenshot(page, 'reviewer-unsigned-once')
    await page.close()
  })

  it('puts Cancel run apart from Deny, in the run’s own row, not red', async () => {
    const opened = await deployment.openConsole('tina')
    const page = await newPage(opened.url)
    const { request } = await bankRun('cancel')
    const card = page.locator(`.item[data-id="${request.requestId}"]`)
    await card.waitFor()
    const deny = card.locator('button.deny')
    const cancel = card.locator('button.cancel')
    const [denyBox, cancelBox] = await Promise.all([deny.boundingBox(), cancel.boundingBox()])
    if (!denyBox || !cancelBox) throw new Error('no Deny or Cancel button on the card')
    // Not beside Deny, nor right under it: rows apart, with the edit and the call's details between.
    expect(cancelBox.y - (denyBox.y + denyBox.height)).toBeGreaterThan(60)
    expect(await cancel.evaluate((b) => b.closest('.run-controls') !== null)).toBe(true)
    expect(await deny.evaluate((b) => b.closest('.run-controls') === null)).toBe(true)
    const colour = (button: typeof deny) => button.evaluate((b) => getComputedStyle(b).backgroundColor)
    const [denyColour, cancelColour] = await Promise.all([colour(deny), colour(cancel)])
    expect(cancelColour).not.toBe(denyColour)
    const [r, g, b] = (cancelColour.match(/\d+/g) ?? []).map(Number)
    expect((r ?? 0) - Math.min(g ?? 0, b ?? 0), `Cancel is ${cancelColour}`).toBeLessThan(40)
    // The run view's Cancel is the same neutral button, in the run's row.
    await page.goto(`${opened.url}/#runs`)
    const runCancel = page.locator('#run-detail .run-controls button.cancel')
    await runCancel.waitFor()
    expect(await colour(runCancel)).toBe(cancelColour)
    await page.close()
  })

  it('colours the audit by outcome, and reads a refused decision as refused, not as what it asked', async () => {
    const opened = await deployment.openConsole('tina')
    const page = await newPage(opened.url)
    const [granted, denied, forged] = await Promise.all([bankRun('granted'), bankRun('denied'), bankRun('forged')])
    await page.locator(`.item[data-id="${granted.request.requestId}"] button.approve`).click()
    const deniedCard = page.locator(`.item[data-id="${denied.request.requestId}"]`)
    await deniedCard.locator('input.reason').fill('not this month')
    await deniedCard.locator('button.deny').click()
    // Someone on the bus approves the third call "as tina", quoting the wrong digest: the agent refuses it.
    const { bus, subjects } = deployment
    const request = forged.request
    await bus.durablePublish(
      subjects.approvalDecisions('bank'),
      JSON.stringify({
        v: 1,
        type: 'approval.decision',
        requestId: request.requestId,
        callId: request.callId,
        digest: `sha256:${'0'.repeat(64)}`,
        approved: true,
        reviewer: 'tina',
        decidedAt: Date.now(),
      }),
      { msgId: `forged-${request.requestId}` },
    )
    await page.locator('nav a[data-tab="audit"]').click()
    const row = (kind: string, runId: string) => page.locator(`#audit tr[data-kind="${kind}"]`, { hasText: runId })
    const rows = {
      granted: row('approval.granted', granted.runId),
      denied: row('approval.denied', denied.runId),
      refused: row('approval.rejected', forged.runId),
    }
    for (const locator of Object.values(rows)) await locator.waitFor()
    expect(await rows.refused.locator('.decision').textContent()).toBe('refused (it said: approved)')
    expect(await rows.granted.locator('.decision').textContent()).toBe('approved')
    expect(await rows.denied.locator('.decision').textContent()).toBe('denied')
    const looks = async (locator: typeof rows.granted) =>
      locator.evaluate((tr) => ({
        row: getComputedStyle(tr).backgroundColor,
        decision: getComputedStyle(tr.querySelector('.decision') as Element).color,
      }))
    const [ok, no, refused] = await Promise.all([looks(rows.granted), looks(rows.denied), looks(rows.refused)])
    expect(new Set([ok.row, no.row, refused.row]).size).toBe(3)
    expect(new Set([ok.decision, no.decision, refused.decision]).size).toBe(3)
    expect(ok.row).not.toBe('rgba(0, 0, 0, 0)')
    await screenshot(page, 'reviewer-audit')
    await page.close()
  })
})

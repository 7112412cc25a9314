/**
 * The console in real headless Chromium: the claw agent on NATS, the console on its own
 * connection, a person clicking. What the model received is read from the scripted server.
 */
import { randomUUID } from 'node:crypto'
import { busAuditLog, connectAgent, remoteReviewer } from '@signalbox/actors'
import { createBusInspector } from '@signalbox/actors/inspect'
import { type ApprovalRequest, type AuditEntry, createAgent, OpenAIProvider, tool } from '@signalbox/core'
import {
  type ApprovalRequestMessage,
  callDigest,
  type EventMessage,
  encodeMessage,
  PROTOCOL_VERSION,
} from '@signalbox/core/protocol'
import { startScriptedModelServer } from '@signalbox/core/testing'
import { clawScenarios, DENY_REASON, STEERING_TEXT } from '@signalbox/examples/claw/script.ts'
import { lastToolResult } from '@signalbox/examples/shared/expect.ts'
import type { Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { chromiumForFile, type TestBrowser } from '../inspect/support.ts'
import { type Deployment, deploy, expectSettled, openPage, screenshot } from './support.ts'

let browser: TestBrowser
let deployment: Deployment
const pageErrors: string[] = []

beforeAll(async () => {
  ;[browser, deployment] = await Promise.all([chromiumForFile(), deploy()])
})

afterAll(async () => {
  await browser?.close()
  await deployment?.close()
})

async function newPage(url: string): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1500, height: 1000 } })
  page.on('pageerror', (error) => pageErrors.push(error.message))
  // The page runs under `script-src 'self'`: anything it tried to eval, even in a `try`, is reported here.
  await page.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (event) => {
      console.error(`CSP violation: ${event.violatedDirective} ${event.blockedURI}`)
    })
  })
  page.on('console', (message) => {
    if (message.text().startsWith('CSP violation')) pageErrors.push(message.text())
  })
  return openPage(page, url)
}

/** The approval request the agent sends next (its exact call), from its own events. */
function nextRequest(agent: {
  on(type: 'approval.requested', listener: (event: { request: ApprovalRequest }) => void): () => void
}) {
  return new Promise<ApprovalRequest>((resolve) => {
    const off = agent.on('approval.requested', (event) => {
      off()
      resolve(event.request)
    })
  })
}

describe('signalbox console', () => {
  it('shows the run reach awaitingApproval, the exact call in the inbox, and approves it', async () => {
    const opened = await deployment.openConsole('tina')
    const page = await newPage(opened.url)
    const claw = await deployment.claw(clawScenarios.approve.model)
    const requested = nextRequest(claw.agent)
    const handle = claw.agent.start(clawScenarios.approve.prompt)
    const request = await requested

    await page.goto(`${opened.url}/#runs`)
    const awaiting = page.locator('.chart g.node.active[data-state="running.turn.toolCalls.awaitingApproval"]')
    await awaiting.waitFor()
    await expect(page.locator('.run-title').textContent()).resolves.toContain(handle.runId)
    await screenshot(page, 'statechart-awaiting-approval')

    await page.locator('nav a[data-tab="inbox"]').click()
    const card = page.locator(`.item[data-id="${request.requestId}"]`)
    await card.waitFor()
    expect(await card.locator('.tool').textContent()).toBe('drop_claw')
    expect(JSON.parse((await card.locator('pre.arguments').textContent()) ?? '')).toEqual({})
    expect(await card.locator('.call-id').textContent()).toBe(request.callId)
    expect(await card.locator('.digest').textContent()).toBe(callDigest('drop_claw', {}))
    expect(await card.locator('.run').textContent()).toContain(`claw · run ${handle.runId}`)
    expect(await card.locator('.countdown').textContent()).toMatch(/\d+ s \(until /)
    await screenshot(page, 'inbox-approval')

    await card.locator('button.approve').click()
    const result = await handle.result
    expect(result.output).toBe(clawScenarios.approve.answer)
    expect(claw.machine.drops).toEqual([{ over: 'teddy bear', won: 'teddy bear' }])
    await expectSettled(page, request.requestId, 'approved by tina')
    expect(await card.count()).toBe(0)

    await page.locator('nav a[data-tab="runs"]').click()
    await page.locator('.chart g.node.active[data-state="done"]').waitFor()
    await page.locator('.run-status', { hasText: 'done' }).waitFor()
    const events = await page.locator('.events').textContent()
    expect(events).toContain('tool.end')
    expect(events).toContain('drop_claw')
    // Private by default: no tool output, no prompt.
    expect(events).not.toContain('teddy bear')
    await screenshot(page, 'statechart-done')

    await page.locator('nav a[data-tab="audit"]').click()
    const granted = page.locator('#audit tr[data-kind="approval.granted"]')
    await granted.waitFor()
    expect(await granted.locator('.actor').textContent()).toBe('tina')
    expect(await granted.locator('.tool').textContent()).toBe('drop_claw')
    await page.locator('#audit-filters input[name="actor"]').fill('nobody')
    await page.locator('#audit tr[data-kind="approval.granted"]').waitFor({ state: 'detached' })
    await screenshot(page, 'audit')
    await page.close()
    expect(pageErrors).toEqual([])
  })

  it('a denial with a reason in one console leaves the other live, and the model reads the reason', async () => {
    const first = await deployment.openConsole('tina')
    const second = await deployment.openConsole('sam')
    const [pageA, pageB] = await Promise.all([newPage(first.url), newPage(second.url)])
    const claw = await deployment.claw(clawScenarios.deny.model)
    const requested = nextRequest(claw.agent)
    const handle = claw.agent.start(clawScenarios.deny.prompt)
    const request = await requested
    const cardA = pageA.locator(`.item[data-id="${request.requestId}"]`)
    const cardB = pageB.locator(`.item[data-id="${request.requestId}"]`)
    await Promise.all([cardA.waitFor(), cardB.waitFor()])

    await cardB.locator('input.reason').fill(DENY_REASON)
    await cardB.locator('button.deny').click()
    const result = await handle.result
    expect(result.output).toBe(clawScenarios.deny.answer)
    expect(claw.machine.drops).toEqual([])
    const last = claw.model.requestsFor(clawScenarios.deny.model).at(-1)
    const toolMessage = last?.messages.findLast((m) => m.role === 'tool')
    expect(toolMessage?.content).toContain(DENY_REASON)

    // The other console: the item leaves, saying who denied it and why.
    await expectSettled(pageA, request.requestId, `denied by sam: ${DENY_REASON}`)
    expect(await cardA.count()).toBe(0)
    await screenshot(pageA, 'inbox-settled-elsewhere')
    // A late click in the first console is refused, not applied twice.
    const late = await pageA.evaluate(async (id) => {
      const token = document.querySelector('meta[name="signalbox-token"]')?.getAttribute('content') ?? ''
      const response = await fetch(`/api/approvals/${id}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-signalbox-console': token },
        body: JSON.stringify({ approved: true }),
      })
      return { status: response.status, body: await response.text() }
    }, request.requestId)
    expect(late.status).toBe(409)
    expect(late.body).toContain('denied by sam')
    await Promise.all([pageA.close(), pageB.close()])
  })

  it('an item whose deadline passes leaves the inbox as timed out', async () => {
    const opened = await deployment.openConsole('tina')
    const page = await newPage(opened.url)
    // What each card's countdown says when the card is inserted, before any later tick could fill it.
    await page.evaluate(() => {
      const shown: string[] = []
      Object.assign(window, { countdownsAtInsert: shown })
      new MutationObserver((mutations) => {
        for (const mutation of mutations) {
          for (const node of mutation.addedNodes) {
            if (node instanceof HTMLElement && node.matches('.item')) {
              shown.push(node.querySelector('.countdown')?.textContent ?? '')
            }
          }
        }
      }).observe(document.getElementById('inbox') as HTMLElement, { childList: true })
    })
    const claw = await deployment.claw(clawScenarios.timeout.model, { approvalTimeoutMs: 1_500 })
    const requested = nextRequest(claw.agent)
    const handle = claw.agent.start(clawScenarios.timeout.prompt)
    const request = await requested
    await page.locator(`.item[data-id="${request.requestId}"]`).waitFor()
    const atInsert = await page.evaluate(() => (window as unknown as { countdownsAtInsert: string[] }).countdownsAtInsert)
    expect(atInsert[0]).toMatch(/\d+(\.\d)? s \(until /)
    await page.locator(`#settled li[data-id="${request.requestId}"]`, { hasText: 'timed out' }).waitFor()
    expect(await page.locator(`.item[data-id="${request.requestId}"]`).count()).toBe(0)
    const result = await handle.result
    expect(result.output).toBe(clawScenarios.timeout.answer)
    expect(claw.machine.drops).toEqual([])
    await page.close()
  })

  it('cancels a run waiting for approval from its run page', async () => {
    const opened = await deployment.openConsole('tina')
    const page = await newPage(`${opened.url}`)
    const claw = await deployment.claw(clawScenarios.approve.model)
    const requested = nextRequest(claw.agent)
    const handle = claw.agent.start(clawScenarios.approve.prompt)
    const outcome = handle.result.catch((error: unknown) => error)
    const request = await requested
    await page.goto(`${opened.url}/#runs`)
    await page.locator(`#run-tree a[data-run="${handle.runId}"]`).click()
    await page.locator('.chart g.node.active[data-state="running.turn.toolCalls.awaitingApproval"]').waitFor()
    await page.locator('.run-actions button.cancel').click()
    expect(String(((await outcome) as Error).message)).toMatch(/cancelled by tina/)
    expect(claw.machine.drops).toEqual([])
    await page.locator('.run-status', { hasText: 'cancelled' }).waitFor()
    await page.goto(`${opened.url}/#inbox`)
    await page.locator(`.item[data-id="${request.requestId}"]`).waitFor({ state: 'detached' })
    await page.locator(`#settled li[data-id="${request.requestId}"]`, { hasText: 'withdrawn' }).waitFor()
    await page.close()
  })

  it('malformed and forged messages on the bus do not break the page', async () => {
    const opened = await deployment.openConsole('tina')
    const page = await newPage(`${opened.url}/#runs`)
    const { bus, prefix } = deployment
    const junk = ['not json', '{"v":1,"type":"event"}', '\u0000\u0001', JSON.stringify({ v: 99, type: 'event', event: {} })]
    for (const data of junk) {
      bus.publish(`${prefix}.agents.claw.events.run.start`, data)
      bus.publish(`${prefix}.inspect.forger`, data)
      await bus.durablePublish(`${prefix}.approvals.claw`, data, { msgId: randomUUID() })
      await bus.durablePublish(`${prefix}.approvals.claw.decisions`, data, { msgId: randomUUID() })
    }
    // A reviewer-facing request from an agent that sends no schema (an older or foreign one): the page
    // checks JSON syntax only and says the agent will check the rest.
    const foreign = { toolName: 'transfer', arguments: { amount: 5 } }
    await bus.durablePublish(
      `${prefix}.approvals.foreign`,
      encodeMessage(<ApprovalRequestMessage>{
        v: PROTOCOL_VERSION,
        type: 'approval.request',
        requestId: `request-${randomUUID()}`,
        agentId: 'foreign',
        runId: 'run-foreign',
        runPath: [],
        callId: 'call-foreign',
        ...foreign,
        digest: callDigest(foreign.toolName, foreign.arguments),
        deadline: Date.now() + 5_000,
        requestedAt: Date.now(),
      }),
      { msgId: randomUUID() },
    )
    await page.locator('nav a[data-tab="inbox"]').click()
    const foreignCard = page.locator('.item[data-tool="transfer"]')
    await foreignCard.locator('details.edit summary').click()
    expect(await foreignCard.locator('.edit-note').textContent()).toContain('the agent will check')
    await foreignCard.locator('textarea.edited-arguments').fill('{ "amount": ')
    await foreignCard.locator('ul.edit-issues li', { hasText: /^not JSON: / }).waitFor()
    expect(await foreignCard.locator('button.approve-edited').isDisabled()).toBe(true)
    await page.locator('nav a[data-tab="runs"]').click()

    // Well-formed envelopes with hostile fields: markup as a tool name, a state value the chart does not know.
    const ghostRun = 'run-ghost'
    bus.publish(
      `${prefix}.agents.ghost.events.tool.start`,
      encodeMessage(<EventMessage>{
        v: PROTOCOL_VERSION,
        type: 'event',
        event: {
          type: 'tool.start',
          agentId: 'ghost',
          runId: ghostRun,
          runPath: [],
          at: Date.now(),
          toolName: '<img src=x onerror=alert(1)>',
        },
      }),
    )
    bus.publish(
      `${prefix}.inspect.forger`,
      JSON.stringify({
        type: '@xstate.snapshot',
        sessionId: `run:${ghostRun}`,
        snapshot: { value: { nowhere: [1, { x: null }] } },
      }),
    )
    await page.locator(`#run-tree a[data-run="${ghostRun}"]`).waitFor()
    await page.locator(`#run-tree a[data-run="${ghostRun}"]`).click()
    expect(await page.locator('.events').textContent()).toContain('<img src=x onerror=alert(1)>')
    expect(await page.locator('img').count()).toBe(0)

    // Still live: a real request after the junk shows up and can be decided.
    const claw = await deployment.claw(clawScenarios.approve.model)
    const requested = nextRequest(claw.agent)
    const handle = claw.agent.start(clawScenarios.approve.prompt)
    const request = await requested
    await page.locator('nav a[data-tab="inbox"]').click()
    await page.locator(`.item[data-id="${request.requestId}"] button.approve`).click()
    await expect(handle.result).resolves.toMatchObject({ output: clawScenarios.approve.answer })
    expect(pageErrors).toEqual([])
    await page.close()
  })

  it('approves with edited arguments: the tool gets the edit, the model is told, the audit keeps both', async () => {
    const opened = await deployment.openConsole('tina')
    // The page's schema check runs where no script may be compiled at run time.
    const served = await fetch(opened.url)
    expect(served.headers.get('content-security-policy')).toContain("script-src 'self';")
    const page = await newPage(opened.url)
    const { bus, subjects } = deployment
    const model = await startScriptedModelServer({
      scripts: {
        bank: [
          { toolCalls: [{ name: 'pay', arguments: { to: 'ACME', amount: 250 } }] },
          { expect: lastToolResult('ran with'), content: 'Paid.' },
        ],
      },
    })
    const paid: unknown[] = []
    const busAudit = busAuditLog({ bus, subjects })
    // Every entry the agent writes, seen here too: a refused edit would leave an `approval.rejected`.
    const audited: AuditEntry[] = []
    const audit = {
      record: (entry: AuditEntry) => {
        audited.push(entry)
        return busAudit.record(entry)
      },
    }
    const reviewer = remoteReviewer({ bus, subjects, audit })
    const pay = tool({
      name: 'pay',
      description: 'Pay someone. Irreversible.',
      schema: z.object({ to: z.string(), amount: z.number().positive() }),
      needsApproval: true,
      execute: (args) => {
        paid.push(args)
        return `paid ${args.amount} to ${args.to}`
      },
    })
    const agent = createAgent({
      id: 'bank',
      provider: new OpenAIProvider({ baseURL: model.url, apiKey: 'console-test', model: 'bank' }),
      tools: [pay],
      reviewer,
      audit,
      inspect: createBusInspector({ bus, subjects }).inspect,
    })
    const connection = connectAgent(agent, { bus, subjects })
    try {
      const requested = nextRequest(agent)
      const handle = agent.start('Pay ACME 250')
      const request = await requested
      expect(request.parameters).toEqual(pay.parameters)
      const card = page.locator(`.item[data-id="${request.requestId}"]`)
      await card.locator('details.edit summary').click()
      expect(await card.locator('.edit-note').textContent()).toContain("against the tool's schema")
      const editor = card.locator('textarea.edited-arguments')
      const send = card.locator('button.approve-edited')
      const issues = card.locator('ul.edit-issues')
      // Refused in the page, as typed: the wrong type, then a missing key, each named next to the editor.
      await editor.fill('{ "to": "ACME", "amount": "25" }')
      await issues.locator('li', { hasText: /^amount: .*expected number/ }).waitFor()
      expect(await send.isDisabled()).toBe(true)
      await editor.fill('{ "amount": 25 }')
      await issues.locator('li', { hasText: /^to: / }).waitFor()
      expect(await issues.locator('li').count()).toBe(1)
      expect(await send.isDisabled()).toBe(true)
      await screenshot(page, 'inbox-edit-refused')
      await send.click({ force: true })
      expect(await card.locator('p.error').textContent()).toBe('')
      await editor.fill('{ "to": "ACME", "amount": 25 }')
      expect(await issues.locator('li').count()).toBe(0)
      expect(await send.isDisabled()).toBe(false)
      expect(paid).toEqual([])
      await screenshot(page, 'inbox-edit-arguments')
      await card.locator('button.approve-edited').click()
      await expect(handle.result).resolves.toMatchObject({ output: 'Paid.' })
      expect(paid).toEqual([{ to: 'ACME', amount: 25 }])
      const toolMessage = model.requestsFor('bank').at(-1)?.messages.at(-1)
      expect(toolMessage?.content).toContain('ran with {"to":"ACME","amount":25}')
      await expectSettled(page, request.requestId, 'approved by tina: with edited arguments')

      await page.locator('nav a[data-tab="audit"]').click()
      const row = page.locator('#audit tr[data-kind="approval.granted"]', { hasText: 'pay' })
      await row.waitFor()
      expect(JSON.parse((await row.locator('td.edited pre').textContent()) ?? '')).toEqual({ to: 'ACME', amount: 25 })
      expect(await row.textContent()).toContain('"amount": 250')
      // The refused edits never reached the agent: one decision, the valid one.
      expect(audited.filter((entry) => entry.callId === request.callId).map((entry) => entry.kind)).toEqual(['approval.granted'])
      expect(pageErrors).toEqual([])
    } finally {
      connection.close()
      reviewer.close()
      await model.close()
      await page.close()
    }
  })

  it('a request that arrives while a person types keeps their caret: the next keys land in the field', async () => {
    const opened = await deployment.openConsole('tina')
    const page = await newPage(opened.url)
    const { bus, subjects } = deployment
    const model = await startScriptedModelServer({
      scripts: {
        mover: [
          { toolCalls: [{ name: 'move', arguments: { to: 'left' } }] },
          { toolCalls: [{ name: 'move', arguments: { to: 'right' } }] },
        ],
      },
    })
    const reviewer = remoteReviewer({ bus, subjects })
    const agent = createAgent({
      id: 'mover',
      provider: new OpenAIProvider({ baseURL: model.url, apiKey: 'console-test', model: 'mover' }),
      tools: [
        tool({
          name: 'move',
          description: 'Move the claw.',
          schema: z.object({ to: z.string() }),
          needsApproval: true,
          execute: ({ to }) => `moved ${to}`,
        }),
      ],
      reviewer,
    })
    const connection = connectAgent(agent, { bus, subjects })
    const handles: { cancel(reason?: string): void; result: Promise<unknown> }[] = []
    try {
      const firstRequested = nextRequest(agent)
      handles.push(agent.start('Move left.'))
      const first = page.locator(`.item[data-id="${(await firstRequested).requestId}"]`)
      const reason = first.locator('input.reason')
      await reason.click()
      await page.keyboard.type('No, ')
      // Another request comes in above it while she types.
      const secondRequested = nextRequest(agent)
      handles.push(agent.start('Move right.'))
      await page.locator(`.item[data-id="${(await secondRequested).requestId}"]`).waitFor()
      await page.keyboard.type('the penguin')
      expect(await reason.inputValue()).toBe('No, the penguin')
      expect(await reason.evaluate((input) => input === document.activeElement)).toBe(true)
      expect(pageErrors).toEqual([])
    } finally {
      for (const handle of handles) handle.cancel('test over')
      await Promise.allSettled(handles.map((handle) => handle.result))
      connection.close()
      reviewer.close()
      await model.close()
      await page.close()
    }
  })

  it('steers a run from its inbox item; a console with contents allowed shows what was said', { timeout: 45_000 }, async () => {
    const opened = await deployment.openConsole('tina', { includeContents: true })
    const page = await newPage(opened.url)
    const claw = await deployment.claw(clawScenarios.steer.model)
    const requested = nextRequest(claw.agent)
    const handle = claw.agent.start(clawScenarios.steer.prompt)
    const request = await requested
    const card = page.locator(`.item[data-id="${request.requestId}"]`)
    await card.locator('input.steer-text').fill(STEERING_TEXT)
    await card.locator('button.steer').click()
    await expect(handle.result).resolves.toMatchObject({ output: clawScenarios.steer.answer })
    expect(claw.machine.drops).toEqual([])
    expect(claw.machine.position).toBe('penguin')
    await page.locator(`#settled li[data-id="${request.requestId}"]`, { hasText: 'withdrawn' }).waitFor()

    await page.locator('nav a[data-tab="runs"]').click()
    // This run, not whichever the page selected first (earlier tests' runs share the bus).
    await page.locator(`a[data-run="${handle.runId}"]`).click()
    await page.locator('.run-status', { hasText: 'done' }).waitFor()
    const events = await page.locator('.events').textContent()
    expect(events).toContain(`steering.applied drop_claw · from tina${STEERING_TEXT}`)
    expect(events).toContain('The claw is over the penguin')
    await page.locator('nav a[data-tab="audit"]').click()
    const steered = page.locator('#audit tr[data-kind="steering.applied"]').first()
    await steered.waitFor()
    expect(await steered.locator('.actor').textContent()).toBe('tina')
    await page.close()
  })

  it('draws child runs under their parent run', async () => {
    const opened = await deployment.openConsole('tina')
    const page = await newPage(`${opened.url}/#runs`)
    const { bus, subjects } = deployment
    const event = (agentId: string, runId: string, extra: Record<string, unknown>) =>
      bus.publish(
        subjects.events(agentId, 'run.start'),
        encodeMessage(<EventMessage>{
          v: PROTOCOL_VERSION,
          type: 'event',
          event: { type: 'run.start', agentId, runId, at: Date.now(), input: '', runPath: [], ...extra },
        }),
      )
    event('planner', 'run-parent', {})
    event('trains', 'run-child', { parentRunId: 'run-parent', runPath: ['run-parent'], agentPath: ['planner'] })
    await page.locator('#run-tree li:has(> a[data-run="run-parent"]) > ul a[data-run="run-child"]').waitFor()
    await page.locator('#run-tree a[data-run="run-child"]').click()
    expect(await page.locator('.run-title').textContent()).toBe('planner › trains · run run-child')
    await page.close()
  })
})

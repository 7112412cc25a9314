/**
 * The console under test: a private prefix on the shared NATS server, the console on its own bus
 * connection (as a separate process would be), headless Chromium, and the claw agent on another.
 */
import { mkdirSync } from 'node:fs'
import path from 'node:path'
import { connectNatsBus, type NatsBus } from '@signalbox/actors/nats'
import { type Console, type ConsoleOptions, startConsole } from '@signalbox/console'
import { OpenAIProvider } from '@signalbox/core'
import { createSubjects, type Subjects } from '@signalbox/core/bus'
import { type ScriptedModelServer, startScriptedModelServer } from '@signalbox/core/testing'
import { clawOnBus } from '@signalbox/examples/claw/on-bus.ts'
import { clawScripts } from '@signalbox/examples/claw/script.ts'
import type { Page } from 'playwright-core'
import { deleteStream } from '../cli/support.ts'
import { NATS_URL, uniquePrefix } from '../support/env.ts'

export const SCREENSHOTS = path.join(import.meta.dirname, 'screenshots')

export interface Deployment {
  prefix: string
  subjects: Subjects
  /** The agent's connection. */
  bus: NatsBus
  openConsole(
    reviewer: string,
    options?: Pick<ConsoleOptions, 'includeContents' | 'agentKeys' | 'onRefused' | 'trust' | 'signer'>,
  ): Promise<Console>
  /** The claw agent on the bus, playing `model`'s script on its own scripted model server. */
  claw(
    model: string,
    options?: { approvalTimeoutMs?: number },
  ): Promise<ReturnType<typeof clawOnBus> & { model: ScriptedModelServer }>
  close(): Promise<void>
}

export async function deploy(): Promise<Deployment> {
  const prefix = uniquePrefix()
  const subjects = createSubjects(prefix)
  const bus = await connectNatsBus({ servers: NATS_URL, prefix, name: 'console-test-agent' })
  const cleanups: (() => Promise<void> | void)[] = []
  return {
    prefix,
    subjects,
    bus,
    async openConsole(reviewer, options = {}) {
      const consoleBus = await connectNatsBus({ servers: NATS_URL, prefix, name: `console-test-${reviewer}` })
      const opened = await startConsole({ bus: consoleBus, subjects, reviewer, ...options })
      cleanups.push(async () => {
        await opened.close()
        await consoleBus.close()
      })
      await opened.ready
      return opened
    },
    async claw(modelName, options = {}) {
      const model = await startScriptedModelServer({ scripts: clawScripts })
      cleanups.push(() => model.close())
      const claw = clawOnBus({
        bus,
        subjects,
        provider: new OpenAIProvider({ baseURL: model.url, apiKey: 'console-test', model: modelName }),
        approvalTimeoutMs: options.approvalTimeoutMs ?? 60_000,
      })
      cleanups.push(() => claw.close())
      await claw.ready
      return { ...claw, model }
    },
    async close() {
      for (const cleanup of cleanups.reverse()) await cleanup()
      await bus.close()
      await deleteStream(prefix)
    },
  }
}

/** Opens the console in a new tab and waits for its live stream. */
export async function openPage(page: Page, url: string): Promise<Page> {
  await page.goto(url)
  await page.locator('#connection.online').waitFor()
  return page
}

/**
 * Waits until the settled list shows `expected` for `id` (e.g. `denied by sam: reason`). A line
 * can change after it first appears (an item taken for one its run left behind is replaced by the
 * decision when it arrives), so the line is waited for with this outcome, not read once. If it
 * never comes, the error says what the page shows instead: the line's outcome, the item still in
 * the inbox, or nothing at all (a lost settlement and a wrong one read differently).
 */
export async function expectSettled(page: Page, id: string, expected: string): Promise<void> {
  const line = page.locator(`#settled li[data-id="${id}"]`)
  const exact = new RegExp(`^\\s*${expected.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\s*$`)
  try {
    await line.locator('.outcome', { hasText: exact }).waitFor()
  } catch (error) {
    const shown = (await line.count()) > 0 ? ((await line.locator('.outcome').textContent()) ?? '').trim() : undefined
    const pending = await page.locator(`#inbox .item[data-id="${id}"]`).count()
    const connection = await page.locator('#connection').textContent()
    throw new Error(
      `${id}: expected "${expected}" in the settled list, ${shown === undefined ? `found no line (${pending ? 'still in the inbox' : 'not in the inbox'})` : `found "${shown}"`}; connection: ${connection}`,
      { cause: error },
    )
  }
}

export async function screenshot(page: Page, name: string): Promise<void> {
  if (process.env.NOSHOT) return
  mkdirSync(SCREENSHOTS, { recursive: true })
  await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true })
}

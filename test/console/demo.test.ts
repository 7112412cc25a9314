/**
 * `tsx examples/claw/demo.ts --console` as a person plays it: the demo process serves the console,
 * the agent asks which bear, the answer and the approval are given in the browser, the claw drops.
 */
import { ANSWER, QUESTION } from '@signalbox/examples/claw/script.ts'

import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest'
import { chromiumForFile, eventually, runScript, type TestBrowser } from '../inspect/support.ts'
import { screenshot } from './support.ts'

let browser: TestBrowser

beforeAll(async () => {
  browser = await chromiumForFile()
})

afterAll(async () => {
  await browser?.close()
})

describe('examples/claw/demo.ts --console', () => {
  it('plays the claw scenario entirely from the browser', async () => {
    const demo = runScript('examples/claw/demo.ts', ['--console', '--port', '0', '--as', 'tina', '--scripted'])
    onTestFinished(() => demo.kill())
    await eventually(() => /http:\/\/localhost:\d+/.test(demo.stdout()), 20_000, 'the console URL')
    const url = /http:\/\/localhost:\d+/.exec(demo.stdout())?.[0] as string
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } })
    await page.goto(url)

    const question = page.locator('.item.question', { hasText: QUESTION })
    await question.locator('input.answer-text').fill(ANSWER)
    await screenshot(page, 'demo-question')
    await question.locator('button.answer').click()

    const approval = page.locator('.item.approval[data-tool="drop_claw"]')
    await approval.locator('button.approve').click()
    await page.locator('#settled li', { hasText: 'drop_claw' }).filter({ hasText: 'approved by tina' }).waitFor()
    await eventually(() => demo.stdout().includes('won: polar bear'), 10_000, 'the drop')
    expect(demo.stdout()).toContain('Got it! The polar bear is in the prize chute.')
    await page.close()
  })
})

import { readFileSync } from 'node:fs'
import { chromium } from 'playwright-core'
const src = readFileSync('/tmp/agent.mmd', 'utf8')
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--headless', '--no-sandbox', '--disable-gpu'] })
const page = await browser.newPage({ viewport: { width: 1800, height: 1400 } })
await page.setContent('<html><body><div id="out"></div></body></html>')
await page.addScriptTag({ path: '/tmp/mm/node_modules/mermaid/dist/mermaid.min.js' })
const result = await page.evaluate(async (src) => {
  const m = (window as any).mermaid
  m.initialize({ startOnLoad: false })
  try {
    await m.parse(src)
    const { svg } = await m.render('g1', src)
    document.getElementById('out')!.innerHTML = svg
    return { ok: true, len: svg.length }
  } catch (e: any) { return { ok: false, err: String(e?.message ?? e) } }
}, src)
console.log(result)
await page.screenshot({ path: '/tmp/agent.png', clip: { x: 0, y: 0, width: 1800, height: 1300 } })
await browser.close()

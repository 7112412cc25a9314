/**
 * `signalbox run --inspect`, embedded: the inspector page lives in the run's process, so when the
 * run ends the process says so and keeps the page up until the person stops it, whether or not
 * its output is a terminal (here a pipe, as under a script or an IDE's run pane).
 */
import { afterEach, describe, expect, it } from 'vitest'
import { cleanupAll, startProcess } from '../cli/support.ts'
import { freePort } from '../support/nats-server.ts'

afterEach(cleanupAll)

describe('signalbox run --inspect (embedded)', () => {
  it('keeps the inspector page up after the run ends, saying it ended, until Ctrl-C', async () => {
    const port = await freePort()
    const args = ['test/cli/fixtures/local-agent.ts', '--scripted', '--model', 'approved', '--auto', 'approve']
    const proc = startProcess(['run', ...args, '--inspect', '--inspect-port', String(port)])
    await proc.waitFor(`the run ended (done); the inspector page stays up at http://localhost:${port}: Ctrl-C to stop`, 60_000)
    // The run is over and the page still answers.
    const page = await fetch(`http://localhost:${port}`)
    expect(page.status).toBe(200)
    expect(await page.text()).toContain('ws://localhost')
    expect(await proc.stop('SIGINT')).toBe(0)
  })
})

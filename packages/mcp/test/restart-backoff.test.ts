import { SimulatedClock } from '@signalbox/core/testing'
import { describe, expect, it } from 'vitest'
import { McpConnectError, mcpTools } from '../src/index.ts'
import { track } from './support.ts'

/** Lets spawned processes and pipes make progress without touching the simulated clock. */
const settle = async () => {
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setTimeout(resolve, 10))
}

describe('restart backoff', () => {
  it('a server that keeps failing to start is retried after 100, then 200 ms (doubling)', async () => {
    const clock = new SimulatedClock()
    const toolset = track(
      mcpTools({
        command: process.execPath,
        args: ['-e', 'process.exit(3)'],
        stderr: 'ignore',
        name: 'broken',
        clock,
        restartBackoff: { initialDelayMs: 100, maxDelayMs: 1_000 },
      }),
    )
    await expect(toolset.connect()).rejects.toBeInstanceOf(McpConnectError)

    let second: unknown
    const attempt = toolset.connect().catch((e: unknown) => {
      second = e
    })
    await settle()
    expect(second).toBeUndefined()
    clock.increment(99)
    await settle()
    expect(second).toBeUndefined()
    clock.increment(1)
    await attempt
    expect(second).toBeInstanceOf(McpConnectError)

    let third: unknown
    const again = toolset.connect().catch((e: unknown) => {
      third = e
    })
    clock.increment(150)
    await settle()
    expect(third).toBeUndefined()
    clock.increment(50)
    await again
    expect(third).toBeInstanceOf(McpConnectError)
  })
})

import * as mcp from '@signalbox/mcp'
import { describe, expect, it } from 'vitest'

describe('@signalbox/mcp public surface', () => {
  it('exports exactly these values', () => {
    expect(Object.keys(mcp).sort()).toEqual([
      'McpClosedError',
      'McpConnectError',
      'McpServerLostError',
      'McpToolset',
      'mcpTools',
      'parseCommandLine',
      'resultText',
      'signalboxToolName',
    ])
  })
})

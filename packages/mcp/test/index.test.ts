import * as mcp from '@signalbox/mcp'
import { describe, expect, it } from 'vitest'

describe('@signalbox/mcp public surface', () => {
  it('exports exactly these values', () => {
    expect(Object.keys(mcp).sort()).toEqual([
      'DECLINE',
      'McpClosedError',
      'McpConnectError',
      'McpServerLostError',
      'McpToolset',
      'annotationApproval',
      'mcpTools',
      'parseCommandLine',
      'resultText',
      'signalboxToolName',
    ])
  })
})

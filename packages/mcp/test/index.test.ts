import { ErrorCode, SignalboxError } from '@signalbox/core'
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

  it('its errors are SignalboxErrors with codes in ErrorCode', () => {
    const errors = [new mcp.McpConnectError('s', 'x'), new mcp.McpClosedError('s'), new mcp.McpServerLostError('s')]
    for (const error of errors) {
      expect(SignalboxError.is(error)).toBe(true)
      expect(Object.values(ErrorCode)).toContain(error.code)
    }
  })
})

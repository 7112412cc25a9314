import { ConfigError } from '@signalbox/core'
import { describe, expect, it } from 'vitest'
import { parseCommandLine } from '../src/index.ts'

describe('parseCommandLine', () => {
  it('splits words like a shell: quotes, escapes, runs of spaces', () => {
    expect(parseCommandLine(`npx -y  @modelcontextprotocol/server-filesystem '/my docs' "a \\"b\\"" c\\ d ''`)).toEqual({
      command: 'npx',
      args: ['-y', '@modelcontextprotocol/server-filesystem', '/my docs', 'a "b"', 'c d', ''],
    })
    expect(parseCommandLine(`"/opt/my node/bin/node" server.js`)).toEqual({
      command: '/opt/my node/bin/node',
      args: ['server.js'],
    })
  })

  it('an empty command or an open quote is a ConfigError', () => {
    expect(() => parseCommandLine('   ')).toThrow(ConfigError)
    expect(() => parseCommandLine(`node 'server.js`)).toThrow(/Unterminated ' quote/)
  })
})

/**
 * OAuth on Streamable HTTP through the MCP SDK's auth provider: our own server (a real process)
 * refuses MCP requests without a bearer token and points to its authorization server (RFC 9728);
 * the SDK's client_credentials provider gets a token from it and the calls go through.
 */
import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js'
import { createAgent } from '@signalbox/core'
import { describe, expect, it } from 'vitest'
import { ourServer } from '../../../test/support/mcp/our-server.ts'
import { McpConnectError, mcpTools } from '../src/index.ts'
import { scriptedModel, toolResult, track } from './support.ts'

describe('mcpTools({ url, authProvider })', () => {
  it('gets a token through the provider on the 401 and calls the tools with it', async () => {
    const { server, base } = await ourServer('http', { oauth: true })
    const authProvider = new ClientCredentialsProvider({
      clientId: 'signalbox-test',
      clientSecret: 'test-secret',
      expectedIssuer: base as string,
    })
    const toolset = track(mcpTools({ ...server, name: 'guarded', authProvider }))
    const tools = await toolset.tools()
    expect(authProvider.tokens()?.access_token).toMatch(/^[0-9a-f]{32}$/)
    const { provider } = await scriptedModel({
      '*': [{ toolCalls: [{ id: 'c1', name: 'lookup', arguments: { key: 'door code' } }] }, { content: 'done' }],
    })
    const result = await createAgent({ provider, tools }).run('look the door code up')
    expect(toolResult(result.messages, 'c1')).toBe('value of door code')
  })

  it('without a provider, or with a wrong secret, connecting fails with a clear error', async () => {
    const { server, base } = await ourServer('http', { oauth: true })
    const bare = track(mcpTools({ ...server, name: 'guarded' }))
    const refused = await bare.connect().catch((e: unknown) => e)
    expect(refused).toBeInstanceOf(McpConnectError)
    expect(String(refused)).toMatch(
      /Could not connect to the MCP server "guarded": .*The server wants authorization \(HTTP 401\)/,
    )
    const wrong = track(
      mcpTools({
        ...server,
        name: 'guarded',
        authProvider: new ClientCredentialsProvider({
          clientId: 'signalbox-test',
          clientSecret: 'nope',
          expectedIssuer: base as string,
        }),
      }),
    )
    const denied = await wrong.connect().catch((e: unknown) => e)
    expect(denied).toBeInstanceOf(McpConnectError)
    expect(String(denied)).toMatch(/invalid_client/)
  })
})

/**
 * The client OpenAIProvider builds over HTTPS (`nodeHttpFetch` on `node:https`): the certificate
 * is checked against the CAs Node trusts (NODE_EXTRA_CA_CERTS included), and one TLS connection
 * carries call after call.
 */
import { execFile } from 'node:child_process'
import path from 'node:path'
import { promisify } from 'node:util'
import { expect, it } from 'vitest'

const FIXTURES = path.join(import.meta.dirname, 'fixtures')

async function callOverTls(env: NodeJS.ProcessEnv): Promise<unknown> {
  const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', path.join(FIXTURES, 'https-call.ts')], {
    cwd: FIXTURES,
    env,
  })
  return JSON.parse(stdout.trim().split('\n').at(-1) as string)
}

it('a trusted certificate: both calls answered over one TLS connection', async () => {
  const env: NodeJS.ProcessEnv = { ...process.env, NODE_EXTRA_CA_CERTS: path.join(FIXTURES, 'localhost-cert.pem') }
  delete env.NODE_TLS_REJECT_UNAUTHORIZED
  expect(await callOverTls(env)).toEqual({ replies: ['hello over TLS', 'hello over TLS'], connections: 1 })
}, 60_000)

it('an untrusted certificate: the call fails as unreachable, saying why, and nothing is answered', async () => {
  const env = { ...process.env }
  delete env.NODE_EXTRA_CA_CERTS
  delete env.NODE_TLS_REJECT_UNAUTHORIZED
  const unreachable = {
    code: 'PROVIDER_UNREACHABLE',
    cause: 'DEPTH_ZERO_SELF_SIGNED_CERT',
    message: expect.stringMatching(
      /^Could not reach the model endpoint https:\/\/127\.0\.0\.1:\d+\/v1 \(model "m"\): Connection error \(self-signed certificate\)\./,
    ),
  }
  expect(await callOverTls(env)).toEqual({ replies: [unreachable, unreachable], connections: 0 })
}, 60_000)

/**
 * `signalbox console` as a person starts it: a real process on the bus, a page served entirely
 * from this machine, actions refused without the page's token, Ctrl-C stops it.
 */

import { randomUUID } from 'node:crypto'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { connectNatsBus } from '@signalbox/actors/nats'
import { createSigner, newUserSeed } from '@signalbox/actors/trust'
import { createSubjects } from '@signalbox/core/bus'
import { callDigest, encodeMessage, PROTOCOL_VERSION } from '@signalbox/core/protocol'
import { afterEach, describe, expect, it } from 'vitest'
import { busArgs, cleanupAll, deleteStream, runCli, startProcess } from '../cli/support.ts'
import { NATS_URL, uniquePrefix } from '../support/env.ts'

afterEach(cleanupAll)

describe('signalbox console', () => {
  it('serves the page and its script from localhost only, and checks the token on every action', async () => {
    const prefix = uniquePrefix()
    const proc = startProcess(['console', '--as', 'tina', '--port', '0', ...busArgs(prefix)])
    const output = await proc.waitFor(/http:\/\/localhost:\d+/)
    const url = /http:\/\/localhost:\d+/.exec(output)?.[0] as string
    expect(output).toContain('reviewing as tina')

    const html = await (await fetch(url)).text()
    const script = await (await fetch(`${url}/app.js`)).text()
    expect(html).toContain('<script type="module" src="/app.js"></script>')
    expect(html).toContain('reviewing as <b id="reviewer">tina</b>')
    // Offline: nothing is fetched from another host.
    expect(`${html}\n${script}`).not.toMatch(/(src|href)=["']?https?:/)
    expect(`${html}\n${script}`).not.toMatch(/(import|fetch)\(["']https?:/)
    const token = /name="signalbox-token" content="([^"]+)"/.exec(html)?.[1] as string

    const forged = await fetch(`${url}/api/approvals/anything`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ approved: true }),
    })
    expect(forged.status).toBe(403)
    const post = (path: string, body: unknown) =>
      fetch(`${url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-signalbox-console': token },
        body: JSON.stringify(body),
      })
    const unknown = await post('/api/approvals/req-unknown', { approved: true })
    expect(unknown.status).toBe(409)
    const bad = await post('/api/approvals/req-unknown', { approved: 'yes' })
    expect(bad.status).toBe(400)
    const steer = await post('/api/runs/run-unknown/steer', { text: 'stop' })
    expect(steer.status).toBe(404)
    expect(await steer.text()).toContain('UNKNOWN_RUN')

    // DNS rebinding: a request addressed to another host name is refused.
    const rebound = await new Promise<number>((resolve, reject) => {
      const target = new URL(url)
      http
        .get(
          { host: '127.0.0.1', port: target.port, path: '/', headers: { host: `evil.example:${target.port}` } },
          (response) => {
            response.resume()
            resolve(response.statusCode ?? 0)
          },
        )
        .on('error', reject)
    })
    expect(rebound).toBe(403)

    expect(await proc.stop('SIGINT')).toBe(0)
    await deleteStream(prefix)
  })

  it('refuses to start without --as', async () => {
    const result = await runCli(['console', ...busArgs(uniquePrefix())])
    expect(result.code).toBe(2)
    expect(result.stderr).toContain('--as <name> is required')
  })

  it('refuses an --agent-key that is not a public nkey, saying so', async () => {
    const prefix = uniquePrefix()
    const result = await runCli(['console', '--as', 'tina', '--port', '0', '--agent-key', 'UNOTAKEY', ...busArgs(prefix)])
    expect(result.code).not.toBe(0)
    expect(result.stderr).toContain('"UNOTAKEY" is not a public nkey')
    await deleteStream(prefix)
  })

  it("with --trust, says the stream's old unsigned requests in one line, and each new one as it comes", async () => {
    const tmp = await mkdtemp(path.join(os.tmpdir(), 'signalbox-console-backlog-'))
    const prefix = uniquePrefix()
    const bus = await connectNatsBus({ servers: NATS_URL, prefix, name: 'console-backlog' })
    try {
      const agent = createSigner(newUserSeed())
      await writeFile(
        path.join(tmp, 'trust.json'),
        JSON.stringify({ keys: { [agent.publicKey]: 'claw' }, agents: { claw: [agent.publicKey] } }),
      )
      const subjects = createSubjects(prefix)
      const unsigned = async (n: number) => {
        const now = Date.now()
        const request = {
          v: PROTOCOL_VERSION,
          type: 'approval.request' as const,
          requestId: `request_${n}_${randomUUID()}`,
          agentId: 'claw',
          runId: `run_${n}`,
          runPath: [],
          callId: `call_${n}`,
          toolName: 'drop_claw',
          arguments: {},
          digest: callDigest('drop_claw', {}),
          deadline: now + 120_000,
          requestedAt: now,
        }
        await bus.durablePublish(subjects.approvals('claw'), encodeMessage(request), { msgId: request.requestId })
        return request.requestId
      }
      // Earlier runs left unsigned requests in the stream.
      for (let n = 0; n < 6; n++) await unsigned(n)
      const proc = startProcess([
        'console',
        '--as',
        'tina',
        '--port',
        '0',
        '--trust',
        path.join(tmp, 'trust.json'),
        ...busArgs(prefix),
      ])
      await proc.waitFor(/http:\/\/localhost:\d+/)
      await proc.waitFor(
        'refused 6 approval requests already in the stream when the console started, unseen: not from a trusted agent',
      )
      expect(proc.stderr).not.toMatch(/refused approval request request_\d/)
      // A new one is said at once, on its own line.
      const fresh = await unsigned(99)
      await proc.waitFor(`refused approval request ${fresh} unseen: not from a trusted agent`)
      expect(proc.stderr.match(/^refused /gm)).toHaveLength(2)
      expect(await proc.stop('SIGINT')).toBe(0)
    } finally {
      await bus.close()
      await deleteStream(prefix)
      await rm(tmp, { recursive: true, force: true })
    }
  })

  it('signs with --nkey and checks against a --trust policy file, saying so; an unreadable policy is refused', async () => {
    const tmp = await mkdtemp(path.join(os.tmpdir(), 'signalbox-console-trust-'))
    try {
      const seed = newUserSeed()
      const tina = createSigner(seed)
      await writeFile(path.join(tmp, 'tina.nk'), seed)
      const ops = createSigner(newUserSeed()).publicKey
      const policy = { keys: { [tina.publicKey]: 'tina', [ops]: 'ops' }, answerers: [tina.publicKey], reviewers: [ops] }
      await writeFile(path.join(tmp, 'trust.json'), JSON.stringify(policy))
      const prefix = uniquePrefix()
      const missing = await runCli(['console', '--as', 'tina', '--trust', path.join(tmp, 'nope.json'), ...busArgs(prefix)])
      expect(missing.code).toBe(1)
      expect(missing.stderr).toContain(`cannot read the trust policy file ${path.join(tmp, 'nope.json')}: no such file`)
      const args = ['--nkey', path.join(tmp, 'tina.nk'), '--trust', path.join(tmp, 'trust.json')]
      const proc = startProcess(['console', '--as', 'tina', '--port', '0', ...args, ...busArgs(prefix)])
      const output = await proc.waitFor(/http:\/\/localhost:\d+/)
      expect(output).toContain(`signing as ${tina.publicKey}`)
      expect(output).toContain(
        `trust policy ${path.join(tmp, 'trust.json')}: requests not checked; only its reviewers settle requests elsewhere; only its answerers settle questions elsewhere`,
      )
      // tina may answer but the policy lists other reviewers: her decisions would be refused, and she is told.
      await proc.waitFor('warning: your key')
      expect(proc.stderr).toContain(`your key ${tina.publicKey} is not among the policy's reviewers`)
      expect(proc.stderr).not.toContain("policy's answerers")
      expect(await proc.stop('SIGINT')).toBe(0)
      await deleteStream(prefix)
    } finally {
      await rm(tmp, { recursive: true, force: true })
    }
  })
})

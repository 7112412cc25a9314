/**
 * The protocol is language-neutral: a reviewer that uses neither signalbox's code nor a NATS
 * client library (a bare TCP socket speaking the NATS text protocol, written from
 * docs/protocol.md alone) approves one call of a real agent and denies another; signing its
 * decisions with node:crypto's ed25519 and the recipe of §17, it satisfies an agent's trust policy
 * for the tools its key may decide, and only those.
 */
import { readFileSync } from 'node:fs'
import net from 'node:net'
import { remoteReviewer } from '@signalbox/actors'
import { connectNatsBus, defaultStreamName } from '@signalbox/actors/nats'
import { authorizationBlock, createSigner, createTrustPolicy, newUserSeed, rolePermissions } from '@signalbox/actors/trust'
import { createAgent, MemoryAuditLog, RunFailedError, tool } from '@signalbox/core'
import { createSubjects } from '@signalbox/core/bus'
import { ScriptedProvider } from '@signalbox/core/testing'
import { afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { foreignSign } from '../support/doc-signer.ts'
import { NATS_URL, uniquePrefix } from '../support/env.ts'
import { startConfigServer } from '../support/nats-config-server.ts'

interface Delivery {
  subject: string
  reply: string | undefined
  headers: string
  payload: string
}

/** Just enough of the NATS text protocol for a reviewer (docs/protocol.md §2, appendix A). */
class RawNats {
  readonly #socket: net.Socket
  #buffer = Buffer.alloc(0)
  readonly #deliveries: Delivery[] = []
  #wake: (() => void) | undefined
  readonly #pongs: (() => void)[] = []

  constructor(url: string) {
    const { hostname, port } = new URL(url)
    this.#socket = net.connect(Number(port), hostname)
    this.#socket.on('data', (chunk: Buffer) => {
      this.#buffer = Buffer.concat([this.#buffer, chunk])
      this.#parse()
    })
    this.#socket.on('error', () => {})
  }

  send(line: string): void {
    this.#socket.write(line)
  }

  /** Resolves at the server's next PONG: everything sent before the last PING was processed. */
  flushed(): Promise<void> {
    return new Promise((resolve) => this.#pongs.push(resolve))
  }

  /** The next message delivered on any subscription, or only on subjects starting with `on`. */
  async next(on = '', timeoutMs = 10_000): Promise<Delivery> {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const index = this.#deliveries.findIndex((d) => d.subject.startsWith(on))
      if (index >= 0) return this.#deliveries.splice(index, 1)[0] as Delivery
      if (Date.now() > deadline) throw new Error('no message from the server')
      await new Promise<void>((resolve) => {
        this.#wake = resolve
        setTimeout(resolve, 50)
      })
    }
  }

  close(): void {
    this.#socket.destroy()
  }

  #parse(): void {
    for (;;) {
      const end = this.#buffer.indexOf('\r\n')
      if (end < 0) return
      const line = this.#buffer.subarray(0, end).toString('utf8')
      const parts = line.split(/ +/)
      const op = parts[0]?.toUpperCase()
      if (op === 'PING') {
        this.send('PONG\r\n')
      } else if (op === 'PONG') {
        for (const resolve of this.#pongs.splice(0)) resolve()
      } else if (op === 'MSG' || op === 'HMSG') {
        // MSG <subject> <sid> [reply] <bytes> | HMSG <subject> <sid> [reply] <header bytes> <total bytes>
        const hasHeaders = op === 'HMSG'
        const total = Number(parts[parts.length - 1])
        const headerBytes = hasHeaders ? Number(parts[parts.length - 2]) : 0
        const fixed = hasHeaders ? 5 : 4
        const reply = parts.length > fixed ? parts[3] : undefined
        if (this.#buffer.length < end + 2 + total + 2) return
        const body = this.#buffer.subarray(end + 2, end + 2 + total)
        this.#deliveries.push({
          subject: parts[1] as string,
          reply,
          headers: body.subarray(0, headerBytes).toString('utf8'),
          payload: body.subarray(headerBytes).toString('utf8'),
        })
        this.#buffer = this.#buffer.subarray(end + 2 + total + 2)
        this.#wake?.()
        continue
      }
      this.#buffer = this.#buffer.subarray(end + 2)
    }
  }
}

const cleanups: (() => unknown)[] = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

describe('a reviewer written against docs/protocol.md with a raw TCP socket', () => {
  it('approves one call and denies another; the agent applies exactly those decisions', async () => {
    const prefix = uniquePrefix()
    const subjects = createSubjects(prefix)
    const bus = await connectNatsBus({ servers: NATS_URL, prefix, name: 'raw-reviewer-test' })
    cleanups.push(() => bus.close())

    // The reviewer: subscribe to the requests (the `*` keeps decisions out), and to an inbox for the stream's acks.
    const raw = await rawReviewer(prefix)
    cleanups.push(() => raw.close())

    const paid: unknown[] = []
    const pay = tool({
      name: 'pay',
      description: 'Pay an invoice. Irreversible.',
      schema: z.object({ invoice: z.string(), amount: z.number() }),
      needsApproval: true,
      execute: (args) => {
        paid.push(args)
        return `paid ${args.invoice}`
      },
    })
    const provider = new ScriptedProvider({
      script: [
        { toolCalls: [{ id: 'c1', name: 'pay', arguments: { invoice: 'A-1', amount: 120 } }] },
        { toolCalls: [{ id: 'c2', name: 'pay', arguments: { invoice: 'B-2', amount: 9000 } }] },
        { content: 'Paid A-1; B-2 was refused.' },
      ],
    })
    const audit = new MemoryAuditLog()
    const agent = createAgent({
      id: 'payer',
      audit,
      provider,
      tools: [pay],
      reviewer: remoteReviewer({ bus, subjects }),
      approvalTimeoutMs: 20_000,
    })
    const run = agent.run('Pay A-1 and B-2.')

    const answered: string[] = []
    for (const verdict of [{ approved: true }, { approved: false, reason: 'Amounts over 1000 need the finance lead' }]) {
      const delivery = await raw.next(`${prefix}.approvals.`)
      expect(delivery.subject).toBe(`${prefix}.approvals.payer`)
      const request = JSON.parse(delivery.payload) as Record<string, unknown>
      expect(request).toMatchObject({ v: 1, type: 'approval.request', agentId: 'payer', toolName: 'pay' })
      const decision = {
        v: 1,
        type: 'approval.decision',
        requestId: request.requestId,
        callId: request.callId,
        digest: request.digest,
        ...verdict,
        reviewer: 'raw-reviewer',
        decidedAt: Date.now(),
      }
      // Stored once the stream acks it.
      await publishDecision(raw, `${prefix}.approvals.payer.decisions`, decision, `decision-${request.requestId}-raw-reviewer`)
      answered.push(String(request.callId))
    }

    const result = await run
    expect(answered).toEqual(['c1', 'c2'])
    expect(paid).toEqual([{ invoice: 'A-1', amount: 120 }])
    const toolMessages = result.messages.filter((m) => m.role === 'tool').map((m) => m.content)
    expect(toolMessages[0]).toBe('paid A-1')
    expect(toolMessages[1]).toMatch(/^Denied by raw-reviewer: Amounts over 1000 need the finance lead\./)
    const kinds = audit.entries.map((e) => [e.kind, e.actor])
    expect(kinds).toEqual([
      ['approval.granted', 'raw-reviewer'],
      ['approval.denied', 'raw-reviewer'],
    ])

    // Clean the test's stream off the shared server.
    await bus.connection.request(`$JS.API.STREAM.DELETE.${bus.streamName}`, '', { timeout: 2_000 }).catch(() => {})
  })
})

/**
 * Connects a raw reviewer to the requests of `prefix` and to an inbox for the stream's acks;
 * resolves once the server answered the PING after the subscriptions (a core subscription sees
 * only what is published after it is in place).
 */
async function rawReviewer(prefix: string): Promise<RawNats> {
  const raw = new RawNats(NATS_URL)
  raw.send(
    'CONNECT {"verbose":false,"pedantic":false,"headers":true,"no_responders":true,"protocol":1,"name":"raw-reviewer"}\r\n',
  )
  raw.send(`SUB ${prefix}.approvals.* 1\r\n`)
  raw.send('SUB _INBOX.raw.* 2\r\n')
  const subscribed = raw.flushed()
  raw.send('PING\r\n')
  await subscribed
  return raw
}

/** Publishes a decision to the agent's decisions stream (HPUB with a `Nats-Msg-Id`) and waits for the stream's ack. */
async function publishDecision(raw: RawNats, subject: string, decision: Record<string, unknown>, msgId: string): Promise<void> {
  const payload = JSON.stringify(decision)
  const headers = `NATS/1.0\r\nNats-Msg-Id: ${msgId}\r\n\r\n`
  const size = Buffer.byteLength(headers) + Buffer.byteLength(payload)
  raw.send(`HPUB ${subject} _INBOX.raw.${msgId} ${Buffer.byteLength(headers)} ${size}\r\n${headers}${payload}\r\n`)
  const ack = await raw.next(`_INBOX.raw.${msgId}`)
  expect(JSON.parse(ack.payload)).toMatchObject({ seq: expect.any(Number) })
}

describe('a raw-socket reviewer that signs with node:crypto per docs/protocol.md §17', () => {
  it('has its signed decision applied once for a tool its key may decide, and rejected for one it may not', async () => {
    const prefix = uniquePrefix()
    const subjects = createSubjects(prefix)
    const bus = await connectNatsBus({ servers: NATS_URL, prefix, name: 'raw-signed-reviewer-test' })
    cleanups.push(() => bus.close())
    cleanups.push(() => bus.connection.request(`$JS.API.STREAM.DELETE.${bus.streamName}`, '', { timeout: 2_000 }).catch(() => {}))

    // The operator makes the reviewer's key; the reviewer only ever holds the seed string.
    const seed = newUserSeed()
    const publicKey = createSigner(seed).publicKey
    const trust = createTrustPolicy({
      keys: { [publicKey]: 'finance bot' },
      reviewers: { pay: [publicKey] }, // pay only: refunds need someone else
    })

    const raw = await rawReviewer(prefix)
    cleanups.push(() => raw.close())

    const paid: unknown[] = []
    const refunded: unknown[] = []
    const pay = tool({
      name: 'pay',
      description: 'Pay an invoice. Irreversible.',
      schema: z.object({ invoice: z.string(), amount: z.number() }),
      needsApproval: true,
      execute: (args) => {
        paid.push(args)
        return `paid ${args.invoice}`
      },
    })
    const refund = tool({
      name: 'refund',
      description: 'Refund an invoice. Irreversible.',
      schema: z.object({ invoice: z.string() }),
      needsApproval: true,
      execute: (args) => {
        refunded.push(args)
        return `refunded ${args.invoice}`
      },
    })
    const provider = new ScriptedProvider({
      script: [
        { toolCalls: [{ id: 'c1', name: 'pay', arguments: { invoice: 'A-1', amount: 120 } }] },
        { toolCalls: [{ id: 'c2', name: 'refund', arguments: { invoice: 'A-1' } }] },
        { content: 'done' },
      ],
    })
    const audit = new MemoryAuditLog()
    const reviewer = remoteReviewer({ bus, subjects, trust, audit })
    cleanups.push(() => reviewer.close())
    const agent = createAgent({ id: 'payer', audit, provider, tools: [pay, refund], reviewer, approvalTimeoutMs: 60_000 })
    const handle = agent.start('Pay A-1, then refund it.')
    const outcome = handle.result.then(
      () => undefined,
      (error: unknown) => error,
    )
    const decisions = `${prefix}.approvals.payer.decisions`

    const sign = (request: Record<string, unknown>, n: number) => {
      const decision = {
        v: 1,
        type: 'approval.decision',
        requestId: request.requestId,
        callId: request.callId,
        digest: request.digest,
        approved: true,
        reviewer: 'anyone-i-like', // the agent shows the policy's name for the key, not this
        decidedAt: Date.now() + n,
      }
      return { ...decision, signer: publicKey, signature: foreignSign(decision, seed, publicKey) }
    }

    // pay: the signed approval is applied; sent again (a new message id), it is not applied twice.
    const payRequest = JSON.parse((await raw.next(`${prefix}.approvals.`)).payload) as Record<string, unknown>
    expect(payRequest).toMatchObject({ type: 'approval.request', toolName: 'pay', callId: 'c1' })
    const payDecision = sign(payRequest, 0)
    await publishDecision(raw, decisions, payDecision, 'pay-1')
    await publishDecision(raw, decisions, payDecision, 'pay-again')

    // refund: the same key, a valid signature, but not allowed for this tool.
    const refundRequest = JSON.parse((await raw.next(`${prefix}.approvals.`)).payload) as Record<string, unknown>
    expect(refundRequest).toMatchObject({ type: 'approval.request', toolName: 'refund', callId: 'c2' })
    await publishDecision(raw, decisions, sign(refundRequest, 1), 'refund-1')

    const refusedRefund = () => audit.entries.find((e) => e.kind === 'approval.rejected' && e.toolName === 'refund')
    const deadline = Date.now() + 10_000
    while (!refusedRefund() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50))
    expect(paid).toEqual([{ invoice: 'A-1', amount: 120 }])
    expect(refunded).toEqual([])
    expect(audit.entries.map((e) => [e.kind, e.actor, e.toolName])).toEqual([
      ['approval.granted', 'finance bot', 'pay'],
      ['approval.rejected', expect.anything(), 'pay'], // the second copy: already settled
      ['approval.rejected', expect.anything(), 'refund'],
    ])
    expect(audit.entries[1]?.reason).toMatch(/already settled/)
    expect(refusedRefund()?.reason).toMatch(/^key-not-allowed: finance bot .*may not approve or deny calls of refund/)
    // The refund call is still waiting for someone allowed to decide it.
    expect(agent.runs.get(handle.runId)?.actor.getSnapshot().value).toMatchObject({
      running: { turn: { toolCalls: 'awaitingApproval' } },
    })
    handle.cancel('test over')
    expect(await outcome).toBeInstanceOf(RunFailedError)
    expect(refunded).toEqual([])
  })
})

/** §2.6's consumer creation, as the doc writes it: the API subject and the request body, with their placeholders. */
function docConsumerCreate(): { subject: string; body: string } {
  const doc = readFileSync(new URL('../../docs/protocol.md', import.meta.url), 'utf8')
  const section = doc.slice(doc.indexOf('### 2.6 Consuming durable messages'), doc.indexOf('### 2.7'))
  const found = /C: PUB (\$JS\.API\.CONSUMER\.\S+) _INBOX\.me\.c1 <#bytes>\n\s*C: (\{.*\})\n/.exec(section)
  if (!found) throw new Error('§2.6 shows no consumer creation')
  return { subject: found[1] as string, body: found[2] as string }
}

describe('a raw-socket reviewer written from §2.6 and §17, under the generated permissions', () => {
  it('creates the shared durable, pulls, keeps and acknowledges the request, signs its decision: applied, no violation', async () => {
    const prefix = 'rawlp.v1'
    const subjects = createSubjects(prefix)
    const stream = defaultStreamName(prefix)
    const agentPermissions = rolePermissions('agent', { prefix, agent: 'payer' })
    const alicePermissions = rolePermissions('reviewer', { prefix, name: 'alice' })
    const server = await startConfigServer(() =>
      authorizationBlock([
        { login: { user: 'payer', password: 'pw-payer' }, permissions: agentPermissions },
        { login: { user: 'alice', password: 'pw-alice' }, permissions: alicePermissions },
      ]),
    )
    cleanups.push(() => server.dispose())
    const bus = await connectNatsBus({
      servers: server.url,
      prefix,
      user: 'payer',
      pass: 'pw-payer',
      inboxPrefix: agentPermissions.inboxPrefix,
      consumerPrefix: agentPermissions.name,
      name: 'raw-lp-agent',
    })
    cleanups.push(() => bus.close())

    // Alice signs as §17 says (doc-signer.ts: node:crypto only); the agent accepts only her key.
    const seed = newUserSeed()
    const publicKey = createSigner(seed).publicKey
    const trust = createTrustPolicy({ keys: { [publicKey]: 'alice (finance)' }, reviewers: [publicKey] })
    const paid: unknown[] = []
    const audit = new MemoryAuditLog()
    const reviewer = remoteReviewer({ bus, subjects, trust })
    cleanups.push(() => reviewer.close())
    const agent = createAgent({
      id: 'payer',
      audit,
      provider: new ScriptedProvider({
        script: [{ toolCalls: [{ id: 'c1', name: 'pay', arguments: { invoice: 'A-1', amount: 120 } }] }, { content: 'Paid.' }],
      }),
      tools: [
        tool({
          name: 'pay',
          description: 'Pay an invoice. Irreversible.',
          schema: z.object({ invoice: z.string(), amount: z.number() }),
          needsApproval: true,
          execute: (args) => {
            paid.push(args)
            return `paid ${args.invoice}`
          },
        }),
      ],
      reviewer,
      approvalTimeoutMs: 30_000,
    })
    const run = agent.run('Pay A-1.')

    // Alice: her user, her inbox (the only one she may read), the doc's consumer creation.
    const raw = new RawNats(server.url)
    cleanups.push(() => raw.close())
    raw.send(
      'CONNECT {"verbose":false,"pedantic":false,"headers":true,"no_responders":true,"protocol":1,"name":"raw-alice","user":"alice","pass":"pw-alice"}\r\n',
    )
    raw.send('SUB _INBOX.alice.* 1\r\nPING\r\n')
    const { subject, body } = docConsumerCreate()
    const fill = (text: string) =>
      text.replaceAll('SIGNALBOX', stream).replaceAll('<durable>', 'reviewers').replaceAll('<filter>', `${prefix}.approvals.*`)
    const config = fill(body)
    raw.send(`PUB ${fill(subject)} _INBOX.alice.c1 ${Buffer.byteLength(config)}\r\n${config}\r\n`)
    const created = JSON.parse((await raw.next('_INBOX.alice.c1')).payload) as Record<string, unknown>
    expect(created).toMatchObject({ type: 'io.nats.jetstream.api.v1.consumer_create_response', name: 'reviewers' })

    const fetch = '{"batch":1,"expires":30000000000}'
    raw.send(`PUB $JS.API.CONSUMER.MSG.NEXT.${stream}.reviewers _INBOX.alice.f1 ${fetch.length}\r\n${fetch}\r\n`)
    const delivery = await raw.next(`${prefix}.approvals.`)
    expect(delivery.reply).toMatch(new RegExp(`^\\$JS\\.ACK\\.${stream}\\.reviewers\\.`))
    const request = JSON.parse(delivery.payload) as Record<string, unknown>
    expect(request).toMatchObject({ type: 'approval.request', toolName: 'pay', callId: 'c1' })
    // Still deciding: keep it (+WPI), then decide, store the decision, and acknowledge the request.
    raw.send(`PUB ${delivery.reply} 4\r\n+WPI\r\n`)
    const decision = {
      v: 1,
      type: 'approval.decision',
      requestId: request.requestId,
      callId: request.callId,
      digest: request.digest,
      approved: true,
      reviewer: 'alice',
      decidedAt: Date.now(),
    }
    const payload = JSON.stringify({ ...decision, signer: publicKey, signature: foreignSign(decision, seed, publicKey) })
    const headers = `NATS/1.0\r\nNats-Msg-Id: decision-${request.requestId}-9f2c4e1a7b3d5f6e8a0c2b4d\r\n\r\n`
    const total = Buffer.byteLength(headers) + Buffer.byteLength(payload)
    raw.send(
      `HPUB ${subjects.approvalDecisions('payer')} _INBOX.alice.d1 ${Buffer.byteLength(headers)} ${total}\r\n${headers}${payload}\r\n`,
    )
    expect(JSON.parse((await raw.next('_INBOX.alice.d1')).payload)).toMatchObject({ seq: expect.any(Number) })
    raw.send(`PUB ${delivery.reply} 4\r\n+ACK\r\n`)

    const result = await run
    expect(result.output).toBe('Paid.')
    expect(paid).toEqual([{ invoice: 'A-1', amount: 120 }])
    expect(audit.entries.map((e) => [e.kind, e.actor])).toEqual([['approval.granted', 'alice (finance)']])
    const flushed = raw.flushed()
    raw.send('PING\r\n')
    await flushed
    expect(server.violations()).toEqual([])
  })
})

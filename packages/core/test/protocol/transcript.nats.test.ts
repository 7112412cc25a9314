/**
 * Replays the raw transcript of docs/protocol.md appendix A against a real `nats-server` (our own, on a
 * free port, killed by pid) and checks the server answers byte for byte what the document shows:
 * the HMSG framing, the PubAcks (including the duplicate on a retried Nats-Msg-Id) and the
 * two-space MSG lines. Also checks the durable-consumer recipe of §2.6/appendix A. Uses only a TCP
 * socket: no NATS client library, exactly like a foreign implementation would.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import net from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DEFAULT_SUBJECT_PREFIX, defaultDurableSubjects } from '../../src/bus/subjects.ts'
import { codeBlocks, parseTranscript, readDoc, type TranscriptFrame } from './helpers.ts'

/** A raw NATS text-protocol connection: write strings, wait for bytes. */
class RawConnection {
  readonly #socket: net.Socket
  #buffer = ''
  #waiters: (() => void)[] = []

  constructor(port: number) {
    this.#socket = net.connect(port, '127.0.0.1')
    this.#socket.setEncoding('utf8')
    this.#socket.on('data', (chunk: string) => {
      this.#buffer += chunk
      for (const wake of this.#waiters.splice(0)) wake()
    })
    this.#socket.on('error', () => {})
  }

  send(text: string): void {
    this.#socket.write(text)
  }

  /** Resolves with the first match of `pattern` in what has arrived, and drops everything up to it. */
  async next(pattern: RegExp, timeoutMs = 5_000): Promise<RegExpExecArray> {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const match = pattern.exec(this.#buffer)
      if (match) {
        this.#buffer = this.#buffer.slice(match.index + match[0].length)
        return match
      }
      const left = deadline - Date.now()
      if (left <= 0) throw new Error(`timed out waiting for ${pattern}; received so far: ${JSON.stringify(this.#buffer)}`)
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left)
        this.#waiters.push(() => {
          clearTimeout(timer)
          resolve()
        })
      })
    }
  }

  /** Waits until at least `length` characters arrived and returns exactly them. */
  async take(length: number, timeoutMs = 5_000): Promise<string> {
    const match = await this.next(new RegExp(`^[\\s\\S]{${length}}`), timeoutMs)
    return match[0]
  }

  /** A request/reply over the raw protocol: subscribe to an inbox, publish, read one MSG. */
  async request(subject: string, payload: string, sid: number): Promise<string> {
    const inbox = `_INBOX.setup.${sid}`
    this.send(`SUB ${inbox} ${sid}\r\nPUB ${subject} ${inbox} ${Buffer.byteLength(payload)}\r\n${payload}\r\n`)
    const header = await this.next(new RegExp(`MSG ${inbox.replaceAll('.', '\\.')} ${sid} +(\\d+)\\r\\n`))
    const body = await this.take(Number(header[1]) + 2)
    return body.slice(0, -2)
  }

  close(): void {
    this.#socket.destroy()
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer()
    server.unref()
    server.on('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo
      server.close(() => resolve(port))
    })
  })
}

async function waitForPort(port: number, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, '127.0.0.1')
      socket.once('connect', () => {
        socket.destroy()
        resolve(true)
      })
      socket.once('error', () => resolve(false))
    })
    if (ok) return
    if (Date.now() > deadline) throw new Error(`nats-server did not listen on ${port}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

const CONNECT = 'CONNECT {"verbose":false,"pedantic":false,"headers":true,"no_responders":true,"protocol":1}\r\n'

describe('docs/protocol.md appendix A against a real nats-server', () => {
  let server: ChildProcess | undefined
  let storeDir = ''
  let port = 0

  beforeAll(async () => {
    storeDir = mkdtempSync(join(tmpdir(), 'signalbox-protocol-'))
    port = await freePort()
    server = spawn('nats-server', ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', storeDir], { stdio: 'ignore' })
    await waitForPort(port)
    // The runtime's stream, as §2.4 describes it.
    const admin = new RawConnection(port)
    await admin.next(/^INFO .*\r\n/)
    admin.send(CONNECT)
    const config = JSON.stringify({
      name: 'SIGNALBOX',
      subjects: defaultDurableSubjects(DEFAULT_SUBJECT_PREFIX),
      storage: 'file',
      retention: 'limits',
      discard: 'old',
      duplicate_window: 120_000_000_000,
    })
    const created = JSON.parse(await admin.request('$JS.API.STREAM.CREATE.SIGNALBOX', config, 1))
    admin.close()
    if (created.error) throw new Error(`stream setup failed: ${JSON.stringify(created.error)}`)
  })

  afterAll(async () => {
    const child = server
    if (child?.pid !== undefined && child.exitCode === null) {
      // Wait for the server to exit before removing its store (it writes to it while shutting down).
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
      process.kill(child.pid, 'SIGTERM')
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5_000))])
      if (child.exitCode === null && child.signalCode === null) process.kill(child.pid, 'SIGKILL')
    }
    rmSync(storeDir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 })
  })

  it('the core-subscription reviewer: the server sends exactly the bytes the transcript shows', async () => {
    const block = codeBlocks(readDoc()).find((b) => b.lang === 'nats')
    if (!block) throw new Error('no ```nats block in docs/protocol.md')
    const { frames, problems } = parseTranscript(block.body)
    expect(problems).toEqual([])

    // The agent: publishes each approval request through JetStream when the transcript shows it arriving.
    const agent = new RawConnection(port)
    await agent.next(/^INFO .*\r\n/)
    agent.send(`${CONNECT}PING\r\n`)
    await agent.next(/PONG\r\n/)
    const publishAsAgent = (frame: TranscriptFrame) => {
      const [subject, , reply, headerBytes, totalBytes] = frame.args
      agent.send(frame.raw.replace(/^HMSG [^\r]*\r\n/, `HPUB ${subject} ${reply} ${headerBytes} ${totalBytes}\r\n`))
    }

    const reviewer = new RawConnection(port)
    try {
      for (const frame of frames) {
        if (frame.from === 'C') {
          reviewer.send(frame.raw)
          continue
        }
        if (frame.op === 'INFO') {
          const info = JSON.parse((await reviewer.next(/^INFO (.*?) ?\r\n/))[1] as string)
          expect(info).toMatchObject({ headers: true, jetstream: true, max_payload: 1048576, proto: 1 })
          continue
        }
        if (frame.op === 'HMSG' && frame.args[0]?.startsWith(`${DEFAULT_SUBJECT_PREFIX}.approvals.`)) publishAsAgent(frame)
        const received = await reviewer.take(frame.raw.length)
        expect(received, `server frame "${frame.raw.split('\r\n')[0]}"`).toBe(frame.raw)
      }
      // Nothing else arrived (no stray replies, no -ERR).
      await new Promise((resolve) => setTimeout(resolve, 200))
      reviewer.send('PING\r\n')
      await expect(reviewer.take('PONG\r\n'.length)).resolves.toBe('PONG\r\n')
    } finally {
      reviewer.close()
      agent.close()
    }
  })

  it('the durable-consumer reviewer: create, fetch, +WPI, +ACK, and an empty no_wait fetch', async () => {
    const doc = readDoc()
    // The API subject that names the durable and its filter: the one the generated permissions allow.
    const create =
      /C: PUB (\$JS\.API\.CONSUMER\.CREATE\.SIGNALBOX\.reviewers\.(\S+)) _INBOX\.alice7\.c1 (\d+)\nC: (\{.*\})\n/.exec(doc)
    expect(create, 'the consumer creation of appendix A').not.toBeNull()
    const [, createSubject, filter, announced, config] = create as RegExpExecArray
    expect(Buffer.byteLength(config as string)).toBe(Number(announced))
    expect(JSON.parse(config as string).config).toMatchObject({ durable_name: 'reviewers', filter_subject: filter })

    const reviewer = new RawConnection(port)
    try {
      await reviewer.next(/^INFO .*\r\n/)
      reviewer.send(CONNECT)
      const created = JSON.parse(await reviewer.request(createSubject as string, config as string, 1))
      expect(created).toMatchObject({ type: 'io.nats.jetstream.api.v1.consumer_create_response', name: 'reviewers' })
      expect(created.config).toMatchObject({
        filter_subject: `${DEFAULT_SUBJECT_PREFIX}.approvals.*`,
        ack_policy: 'explicit',
        max_deliver: -1,
      })

      // The previous test stored two requests and three decisions; the filter sees only the requests.
      reviewer.send('SUB _INBOX.alice7.* 2\r\n')
      reviewer.send(
        'PUB $JS.API.CONSUMER.MSG.NEXT.SIGNALBOX.reviewers _INBOX.alice7.f1 33\r\n{"batch":1,"expires":30000000000}\r\n',
      )
      const delivered = await reviewer.next(/HMSG (\S+) 2 (\$JS\.ACK\.SIGNALBOX\.reviewers\.\S+) (\d+) (\d+)\r\n/)
      expect(delivered[1]).toBe(`${DEFAULT_SUBJECT_PREFIX}.approvals.claw`) // the original subject, routed by sid
      const body = await reviewer.take(Number(delivered[4]) + 2)
      expect(body).toMatch(
        /^NATS\/1\.0\r\nNats-Msg-Id: request_5d0c2b6e-8f41-4a3b-b1e7-2f9c0d6a4e18\r\n\r\n\{"v":1,"type":"approval\.request"/,
      )
      const ackSubject = delivered[2] as string
      reviewer.send(`PUB ${ackSubject} 4\r\n+WPI\r\nPUB ${ackSubject} 4\r\n+ACK\r\n`)

      // The second request is next; acknowledge it too, then the consumer is empty.
      reviewer.send(
        'PUB $JS.API.CONSUMER.MSG.NEXT.SIGNALBOX.reviewers _INBOX.alice7.f2 33\r\n{"batch":1,"expires":30000000000}\r\n',
      )
      const second = await reviewer.next(/HMSG \S+ 2 (\$JS\.ACK\.SIGNALBOX\.reviewers\.\S+) \d+ (\d+)\r\n/)
      expect(await reviewer.take(Number(second[2]) + 2)).toContain('request_a71e4c09-2b5d-4e8f-8c36-91d0f4b7e2c5')
      reviewer.send(`PUB ${second[1]} 4\r\n+ACK\r\n`)

      reviewer.send('PUB $JS.API.CONSUMER.MSG.NEXT.SIGNALBOX.reviewers _INBOX.alice7.f3 26\r\n{"batch":1,"no_wait":true}\r\n')
      const empty = 'HMSG _INBOX.alice7.f3 2  28 28\r\nNATS/1.0 404 No Messages\r\n\r\n\r\n'
      expect(doc).toContain('S: HMSG _INBOX.alice7.f2 1  28 28\nS: NATS/1.0 404 No Messages\n')
      await expect(reviewer.take(empty.length)).resolves.toBe(empty)
    } finally {
      reviewer.close()
    }
  })

  it('no responders is an immediate 503 status, as §2.3 shows', async () => {
    const requester = new RawConnection(port)
    try {
      await requester.next(/^INFO .*\r\n/)
      requester.send(
        `${CONNECT}SUB _INBOX.me.* 1\r\nPUB ${DEFAULT_SUBJECT_PREFIX}.agents.nobody.control _INBOX.me.1 31\r\n{"v":1,"type":"control.status"}\r\n`,
      )
      expect(readDoc()).toContain('`HMSG <inbox> <sid> 16 16` with header `NATS/1.0 503`')
      const reply = 'HMSG _INBOX.me.1 1 16 16\r\nNATS/1.0 503\r\n\r\n\r\n'
      await expect(requester.take(reply.length, 2_000)).resolves.toBe(reply)
    } finally {
      requester.close()
    }
  })

  it('a payload above max_payload is refused with -ERR and the connection is closed (§1.6)', async () => {
    const client = new RawConnection(port)
    try {
      await client.next(/^INFO .*\r\n/)
      client.send(`${CONNECT}PUB ${DEFAULT_SUBJECT_PREFIX}.approvals.claw.decisions ${1024 * 1024 + 1}\r\n`)
      await expect(client.next(/-ERR 'Maximum Payload Violation'\r\n/)).resolves.toBeTruthy()
    } finally {
      client.close()
    }
  })
})

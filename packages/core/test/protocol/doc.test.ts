/**
 * `docs/protocol.md` is normative: these tests keep it and the code from drifting apart. Every
 * message type has a JSON example that decodes, every subject the code can build is documented,
 * every event type, audit kind and error code is listed, and the raw NATS transcript is
 * byte-exact.
 */
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { SUBJECT_FAMILIES, type SubjectFamilyName } from '../../src/bus/subject-families.ts'
import { createSubjects, DEFAULT_SUBJECT_PREFIX, defaultDurableSubjects } from '../../src/bus/subjects.ts'
import { formatDuration } from '../../src/duration.ts'
import { AGENT_EVENT_TYPES } from '../../src/events.ts'
import { callDigest, canonicalJson } from '../../src/hitl/digest.ts'
import { AUDIT_KINDS } from '../../src/hitl/types.ts'
import { decodeMessage } from '../../src/protocol/codec.ts'
import { PROTOCOL_MESSAGES } from '../../src/protocol/schemas.ts'
import { codeBlocks, isMessageType, PROTOCOL_ERROR_CODES, parseTranscript, readDoc, schemaOf } from './helpers.ts'

const doc = readDoc()
const blocks = codeBlocks(doc)
const sourceOf = (relative: string) => readFileSync(fileURLToPath(new URL(relative, import.meta.url)), 'utf8')

describe('message types', () => {
  it.each(Object.keys(PROTOCOL_MESSAGES))('"%s" has a JSON example in the doc', (type) => {
    expect(doc).toContain(`"type": "${type}"`)
  })

  const examples = blocks
    .filter((block) => block.lang === 'json')
    .map((block) => ({ ...block, value: JSON.parse(block.body) as Record<string, unknown> }))

  it('every ```json block parses', () => {
    expect(examples.length).toBeGreaterThanOrEqual(Object.keys(PROTOCOL_MESSAGES).length)
  })

  it('every JSON example with a "v" is a valid message of its type', () => {
    const messages = examples.filter((e) => 'v' in e.value)
    expect(messages.length).toBeGreaterThanOrEqual(Object.keys(PROTOCOL_MESSAGES).length)
    for (const example of messages) {
      const type = String(example.value.type)
      expect(isMessageType(type), `docs/protocol.md:${example.line}: unknown type ${type}`).toBe(true)
      if (!isMessageType(type)) continue
      const result = decodeMessage(example.body, schemaOf(type))
      expect(result.ok ? 'ok' : `${result.error.code}: ${result.error.message}`, `docs/protocol.md:${example.line}`).toBe('ok')
    }
  })

  it('every message type has a section with a field table listing each of its example fields', () => {
    for (const example of examples.filter((e) => 'v' in e.value)) {
      for (const field of Object.keys(example.value)) {
        expect(doc, `docs/protocol.md:${example.line}: field "${field}" is not in any table`).toMatch(
          new RegExp(`^\\| \`${field.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\`\\s`, 'm'),
        )
      }
    }
  })

  it('the digests in the examples are real', () => {
    for (const example of examples) {
      const { value } = example
      if (value.type === 'approval.request') {
        expect(value.digest, `docs/protocol.md:${example.line}`).toBe(callDigest(value.toolName as string, value.arguments))
      }
      const entry = value.entry as Record<string, unknown> | undefined
      if (value.type === 'audit' && entry && typeof entry.digest === 'string') {
        expect(entry.digest, `docs/protocol.md:${example.line}`).toBe(callDigest(entry.toolName as string, entry.shown))
      }
    }
  })

  it('the digest test vectors are right', () => {
    const rows = [
      ...doc.matchAll(/^\| `(\w+)`\s+\| (`\{.*?\}`|\*\(none\)\*)\s+\| `(\{.*?\})`.*?\| `(sha256:[0-9a-f]{64})` \|$/gm),
    ]
    expect(rows.length).toBe(3)
    for (const [, toolName, args, canonical, digest] of rows) {
      const parsed = args === '*(none)*' ? undefined : JSON.parse((args as string).slice(1, -1))
      expect(canonicalJson({ arguments: parsed ?? null, toolName }), toolName).toBe(canonical)
      expect(callDigest(toolName as string, parsed), toolName).toBe(digest)
    }
  })
})

describe('subjects', () => {
  /** Every `<prefix>...` subject written in the doc. */
  const documented = new Set(
    [...doc.matchAll(/<prefix>[A-Za-z0-9_.*<>-]*/g)].flatMap(([subject]) => [subject, subject.replace(/\.$/, '')]),
  )
  const SENTINEL = 'QQARG'
  const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
  /** `signalbox.v1.agents.QQARG0.events.>` → /^<prefix>\.agents\.<[A-Za-z-]+>\.events\.>$/ */
  const patternOf = (subject: string) =>
    new RegExp(
      `^${escapeRegExp(subject)
        .replace(new RegExp(`^${escapeRegExp(escapeRegExp(DEFAULT_SUBJECT_PREFIX))}`), '<prefix>')
        .replace(new RegExp(`${SENTINEL}\\d`, 'g'), '<[A-Za-z][A-Za-z-]*>')}$`,
    )

  const subjects = createSubjects(DEFAULT_SUBJECT_PREFIX)
  // `pattern` builds the families' subscription patterns, checked below.
  const builders = Object.entries(subjects).filter(([name, value]) => typeof value === 'function' && name !== 'pattern') as [
    string,
    (...args: string[]) => string,
  ][]

  /** Every token of a family's template, as sentinels (so the pattern is one concrete subject). */
  const tokensOf = (family: SubjectFamilyName) =>
    Object.fromEntries([...SUBJECT_FAMILIES[family].template.matchAll(/\{(\w+)\??\}/g)].map((m, i) => [m[1], `${SENTINEL}${i}`]))

  it('finds the builders', () => {
    expect(builders.length).toBeGreaterThanOrEqual(10)
  })

  it.each(builders.map(([name, build]) => [name, build] as const))('%s(...) is documented', (name, build) => {
    const built: string[] = []
    for (let arity = 0; arity <= build.length; arity++) {
      let subject: string
      try {
        subject = build(...Array.from({ length: arity }, (_, i) => `${SENTINEL}${i}`))
      } catch {
        continue // this arity is not allowed (a required token is missing)
      }
      if (subject.includes('undefined')) continue
      built.push(subject)
    }
    expect(built.length, `${name}: no arity produced a subject`).toBeGreaterThan(0)
    for (const subject of built) {
      const pattern = patternOf(subject)
      const found = [...documented].some((candidate) => pattern.test(candidate))
      expect(found, `${name} builds ${subject}: document it as ${pattern.source.slice(1, -1).replaceAll('\\', '')}`).toBe(true)
    }
  })

  it.each(Object.keys(SUBJECT_FAMILIES) as SubjectFamilyName[])('pattern(%s) is documented', (family) => {
    const subject = subjects.pattern(family)
    const documentedForm = subject.replace(DEFAULT_SUBJECT_PREFIX, '<prefix>')
    const found = [...documented].some(
      (candidate) => candidate === documentedForm || patternOf(subjects.pattern(family, tokensOf(family))).test(candidate),
    )
    expect(found, `pattern('${family}') builds ${subject}: document the family`).toBe(true)
  })

  it('the default prefix, queue group and stream name are the documented ones', () => {
    expect(doc).toContain(`default **\`${DEFAULT_SUBJECT_PREFIX}\`**`)
    expect(doc).toContain('**`signalbox-tools`**')
    expect(doc).toContain('**`SIGNALBOX`**')
  })

  it('the stream captures exactly the documented durable subjects', () => {
    const block = blocks.find((b) => b.lang === 'text' && b.body.includes('<prefix>.agents.*.steer'))
    expect(block, 'the stream subject list in §2.4').toBeDefined()
    const listed = (block?.body ?? '').split('\n').map((line) => line.trim().split(/\s+/)[0])
    expect(listed.sort()).toEqual(defaultDurableSubjects('<prefix>').sort())
  })
})

describe('events, audit kinds and error codes', () => {
  it.each([...AGENT_EVENT_TYPES])('event type %s is listed with its subject token', (type) => {
    expect(doc).toContain(`| \`${type}\` (\`${type.replaceAll('.', '_')}\`)`)
  })

  it('every audit kind is documented', () => {
    const kinds = AUDIT_KINDS
    expect(kinds.length).toBeGreaterThan(0)
    for (const kind of kinds) expect(doc, kind).toContain(`\`${kind}\``)
  })

  it('the protocol error codes are exactly those of codec.ts, and all are documented', () => {
    const inCodec = new Set([...sourceOf('../../src/protocol/codec.ts').matchAll(/'(PROTOCOL_[A-Z_]+)'/g)].map((m) => m[1]))
    expect([...inCodec].sort()).toEqual([...PROTOCOL_ERROR_CODES].sort())
    for (const code of PROTOCOL_ERROR_CODES) expect(doc).toContain(`| \`${code}\``)
  })

  it('the audit kinds are listed in the kinds table of §10, and the kind is an open string', () => {
    const audit = doc.slice(doc.indexOf('## 10. Audit'), doc.indexOf('### 10.1'))
    for (const kind of AUDIT_KINDS) expect(audit, kind).toMatch(new RegExp(`^\\| \`${kind.replaceAll('.', '\\.')}\`\\s`, 'm'))
    expect(audit).toContain('**open** string')
  })

  it('every error code the bundled actors produce is documented, where it belongs', () => {
    const codesIn = (relative: string) =>
      new Set([...sourceOf(relative).matchAll(/'([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)'/g)].map((m) => m[1] as string))
    const wire = doc.slice(doc.indexOf('### 12.2'), doc.indexOf('### 12.3'))
    const clientSide = doc.slice(doc.indexOf('### 12.3'), doc.indexOf('## 13.'))
    // Sent in `error` replies by a tool host.
    const host = codesIn('../../../actors/src/tools/tool-host.ts')
    expect(host.size).toBeGreaterThanOrEqual(6)
    for (const code of host) expect(wire, `tool-host.ts: ${code}`).toContain(`| \`${code}\``)
    // Raised by the caller of a remote tool (never sent).
    const caller = codesIn('../../../actors/src/tools/remote-tool.ts')
    expect(caller.size).toBeGreaterThanOrEqual(4)
    for (const code of caller) expect(clientSide, `remote-tool.ts: ${code}`).toContain(`| \`${code}\``)
    // Agent hosts and parents of remote runs, and the ask_human tool.
    for (const relative of [
      '../../../actors/src/system/agent-system.ts',
      '../../../actors/src/system/tree-budget.ts',
      '../../../actors/src/system/remote-run.ts',
      '../../../actors/src/system/run-host.ts',
      '../../src/hitl/ask-human.ts',
    ]) {
      for (const code of codesIn(relative)) expect(doc, `${relative}: ${code}`).toContain(`| \`${code}\``)
    }
  })

  it('every rejection component of the bundled actors is in the table of §11', () => {
    const components = [
      ...sourceOf('../../../actors/src/agents/agent-connection.ts').matchAll(/component: `agent-\$\{agent\.id\}`/g),
    ].map(() => 'agent-<agent>')
    for (const file of [
      'approvals/remote-reviewer.ts',
      'questions/remote-answerer.ts',
      'approvals/reviewer-service.ts',
      'questions/answer-service.ts',
    ]) {
      components.push(
        ...[...sourceOf(`../../../actors/src/${file}`).matchAll(/component: '([a-z-]+)'/g)].map((m) => m[1] as string),
      )
    }
    expect(components.length).toBe(5)
    const rejections = doc.slice(doc.indexOf('## 11. Rejections'), doc.indexOf('### 11.1'))
    for (const component of components) expect(rejections, component).toMatch(new RegExp(`^\\| \`${component}\`\\s`, 'm'))
  })

  it('every bus error code is documented as client-side', () => {
    const codes = [...sourceOf('../../src/bus/errors.ts').matchAll(/super\(\s*'([A-Z_]+)'/g)].map((m) => m[1] as string)
    expect(codes.length).toBeGreaterThanOrEqual(5)
    const clientSide = doc.slice(doc.indexOf('### 12.3'))
    for (const code of codes) expect(clientSide, code).toContain(`| \`${code}\``)
  })
})

/** Numbers and lists the doc states about the bundled actors, read from their source. */
describe('behaviour of the bundled actors stated in the doc', () => {
  const constant = (relative: string, name: string) => {
    const match = new RegExp(`const ${name} = ([0-9_* ]+)\\n`).exec(sourceOf(relative))
    expect(match, `${relative}: const ${name}`).not.toBeNull()
    return Function(`return ${(match?.[1] ?? '').replaceAll('_', '')}`)() as number
  }

  it('an oversized event keeps exactly the identity fields of §9 (agentPath included)', () => {
    const source = sourceOf('../../../actors/src/agents/agent-connection.ts')
    const list = /const IDENTITY_FIELDS = \[([^\]]*)\]/.exec(source)?.[1] ?? ''
    const inCode = [...list.matchAll(/'([A-Za-z]+)'/g)].map((m) => m[1])
    expect(inCode).toContain('agentPath')
    const stage = /only the identity fields the event has, unchanged: ([^\n]*(?:\n {5}[^\n]*)*)/.exec(doc)?.[1] ?? ''
    const inDoc = [...stage.matchAll(/`([A-Za-z]+)`/g)].map((m) => m[1])
    expect(inDoc).toEqual(inCode)
    expect(constant('../../../actors/src/agents/agent-connection.ts', 'TRIMMED_STRING_LENGTH')).toBe(4096)
    expect(doc).toContain('a string longer than 4096 characters is cut to\n     4095 characters followed by `…`')
  })

  it('TOOL_INVALID_ARGUMENTS lists at most 20 issues; errors are bounded as §12.1 says', () => {
    expect(constant('../../../actors/src/tools/tool-host.ts', 'MAX_LISTED_ISSUES')).toBe(20)
    expect(doc).toContain('At most **20 issues** are listed')
    expect(constant('../../../actors/src/requests/rejections.ts', 'MAX_ERROR_MESSAGE_LENGTH')).toBe(4096)
    expect(constant('../../../actors/src/requests/rejections.ts', 'MAX_DETAILS_BYTES')).toBe(16 * 1024)
    expect(doc).toContain('`details` whose JSON exceeds 16 KiB (16 384 bytes)')
  })

  it('the tool-call deadline is the caller timeout minus min(1 s, 10 %)', () => {
    expect(sourceOf('../../../actors/src/tools/remote-tool.ts')).toContain(
      'deadline: context.clock.now() + timeoutMs - Math.min(1_000, Math.floor(timeoutMs / 10))',
    )
    expect(doc).toContain('`margin = min(1000, floor(timeout / 10))`')
    const margin = (timeout: number) => Math.min(1000, Math.floor(timeout / 10))
    for (const [timeout, text] of [
      [60_000, '60 s → `start + 59 s`'],
      [10_000, '10 s → `start + 9 s`'],
      [5_000, '5 s → `start + 4.5 s`'],
      [500, '500 ms → `start + 450 ms`'],
    ] as const) {
      expect(doc).toContain(text)
      expect(formatDuration(timeout - margin(timeout)).replace(/\s/g, ''), text).toBe(text.split('+ ')[1]?.replace(/[`\s]/g, ''))
    }
  })

  it('the duration wording of §1.8 is what formatDuration writes', () => {
    for (const [ms, text] of [
      [300, '300 ms'],
      [1_500, '1.5s'],
      [60_000, '60s'],
      [90_000, '90s'],
      [120_000, '2 min'],
      [300_000, '5 min'],
      [150_000, '2.5 min'],
    ] as const) {
      expect(formatDuration(ms)).toBe(text)
      expect(doc.slice(doc.indexOf('### 1.8'), doc.indexOf('## 2. NATS mapping'))).toContain(`\`${text}\``)
    }
  })

  it('the reviewer and answer services wait for the settlement log, and use the documented groups', () => {
    expect(constant('../../../actors/src/requests/request-service.ts', 'CATCH_UP_IDLE_MS')).toBe(150)
    expect(doc).toContain('quiet for 150 ms')
    expect(sourceOf('../../../actors/src/approvals/reviewer-service.ts')).toContain("mode: options.mode ?? 'shared',")
    expect(sourceOf('../../../actors/src/approvals/reviewer-service.ts')).toContain("group: options.group ?? 'reviewers',")
    expect(sourceOf('../../../actors/src/questions/answer-service.ts')).toContain("mode: options.mode ?? 'broadcast',")
    expect(sourceOf('../../../actors/src/questions/answer-service.ts')).toContain("group: options.group ?? 'answerers',")
    expect(doc).toContain('by default **`reviewers`**')
    expect(doc).toContain('its default mode is **`broadcast`**')
  })
})

describe('the raw NATS transcript (appendix A)', () => {
  const transcript = blocks.find((block) => block.lang === 'nats')
  if (!transcript) throw new Error('docs/protocol.md has no ```nats transcript block')

  const { frames: parsed, problems } = parseTranscript(transcript.body)

  it('every byte count is exact', () => {
    expect(problems).toEqual([])
  })

  it('connects with headers and no_responders', () => {
    const connect = parsed.find((f) => f.op === 'CONNECT')
    const options = JSON.parse(connect?.args.join(' ') ?? '{}')
    expect(options).toMatchObject({ headers: true, no_responders: true, verbose: false })
  })

  it('subscribes to approval requests only, in a queue group, and to its own inbox', () => {
    const subs = parsed.filter((f) => f.op === 'SUB').map((f) => f.args)
    expect(subs).toContainEqual([`${DEFAULT_SUBJECT_PREFIX}.approvals.*`, 'reviewers', '1'])
    expect(subs.some(([subject]) => subject?.startsWith('_INBOX.'))).toBe(true)
  })

  it('every payload in it is a valid v1 message, with real digests', () => {
    const payloads = parsed.filter((f) => f.payload.startsWith('{"v":'))
    expect(payloads.length).toBe(5)
    for (const frame of payloads) {
      const { type } = JSON.parse(frame.payload) as { type: string }
      expect(isMessageType(type)).toBe(true)
      const result = decodeMessage(frame.payload, schemaOf(type as keyof typeof PROTOCOL_MESSAGES))
      expect(result.ok ? 'ok' : result.error.message).toBe('ok')
      const message = (result.ok ? result.value : {}) as {
        type?: string
        digest?: string
        toolName?: string
        arguments?: unknown
      }
      if (message.type === 'approval.request') {
        expect(message.digest).toBe(callDigest(message.toolName as string, message.arguments))
      }
    }
  })

  it('approves one call and denies the other, quoting each request exactly, durably', () => {
    const requests = parsed.filter((f) => f.op === 'HMSG' && f.payload.includes('"approval.request"'))
    const decisions = parsed.filter((f) => f.op === 'HPUB')
    expect(requests.length).toBe(2)
    expect(decisions.length).toBe(3) // the last one is the retry
    const outcomes: boolean[] = []
    const msgIds: (string | undefined)[] = []
    for (const decisionFrame of decisions) {
      const decision = JSON.parse(decisionFrame.payload)
      const requestFrame = requests.find((r) => JSON.parse(r.payload).requestId === decision.requestId)
      expect(requestFrame).toBeDefined()
      const request = JSON.parse(requestFrame?.payload ?? '{}')
      expect(request.type).toBe('approval.request')
      expect([decision.callId, decision.digest]).toEqual([request.callId, request.digest])
      // Published to the request's agent, with a reply inbox (a JetStream publish) and the documented msg id.
      expect(decisionFrame.args[0]).toBe(`${DEFAULT_SUBJECT_PREFIX}.approvals.${request.agentId}.decisions`)
      expect(decisionFrame.args[1]).toMatch(/^_INBOX\./)
      // `decision-<requestId>-<nonce>`: an unguessable nonce (§4.4), not the reviewer's name.
      const msgId = decisionFrame.headers.find((h) => h.startsWith('Nats-Msg-Id: '))?.slice('Nats-Msg-Id: '.length)
      expect(msgId).toMatch(new RegExp(`^decision-${request.requestId}-[0-9a-f]{24,}$`))
      msgIds.push(msgId)
      // The request carried its own id as Nats-Msg-Id, and a reply subject the reviewer never used.
      expect(requestFrame?.headers).toContain(`Nats-Msg-Id: ${request.requestId}`)
      expect(parsed.some((f) => f.from === 'C' && f.args[0] === requestFrame?.args[2])).toBe(false)
      outcomes.push(decision.approved)
    }
    expect(outcomes).toEqual([true, false, false])
    // The retry keeps its decision's id (the stream de-duplicates it); the two decisions differ.
    expect(msgIds[2]).toBe(msgIds[1])
    expect(msgIds[1]).not.toBe(msgIds[0])
  })

  it('each decision is acknowledged by the stream on its inbox; the retry is a duplicate', () => {
    const acks = parsed
      .filter((f) => f.from === 'S' && f.op === 'MSG' && f.args[0]?.startsWith('_INBOX.'))
      .map((f) => ({ inbox: f.args[0], ack: JSON.parse(f.payload) }))
    const inboxes = parsed.filter((f) => f.op === 'HPUB').map((f) => f.args[1])
    expect(acks.map((a) => a.inbox)).toEqual(inboxes)
    for (const { ack } of acks) expect(ack).toMatchObject({ stream: 'SIGNALBOX', seq: expect.any(Number) })
    expect(acks.map((a) => a.ack.duplicate === true)).toEqual([false, false, true])
    expect(acks[2]?.ack.seq).toBe(acks[1]?.ack.seq)
  })
})

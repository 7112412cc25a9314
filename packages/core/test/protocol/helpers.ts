/**
 * Shared helpers for the protocol tests: the frozen fixtures (named by convention, see
 * `fixtures/README.md`) and the normative document.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import type { z } from 'zod'
import { PROTOCOL_MESSAGES, type ProtocolMessageType } from '../../src/protocol/schemas.ts'

export const FIXTURES_DIR = fileURLToPath(new URL('./fixtures/v1/', import.meta.url))
export const DOC_PATH = fileURLToPath(new URL('../../../../docs/protocol.md', import.meta.url))

/** Every code `decodeMessage` can return (kept in step with `codec.ts` by a test). */
export const PROTOCOL_ERROR_CODES = [
  'PROTOCOL_INVALID_JSON',
  'PROTOCOL_UNSUPPORTED_VERSION',
  'PROTOCOL_UNEXPECTED_TYPE',
  'PROTOCOL_INVALID_MESSAGE',
  'PROTOCOL_TOO_LARGE',
] as const
export type ProtocolErrorCode = (typeof PROTOCOL_ERROR_CODES)[number]

export interface ValidFixture {
  file: string
  type: ProtocolMessageType
  description: string | undefined
  bytes: Uint8Array
}

export interface InvalidFixture {
  file: string
  code: ProtocolErrorCode
  /** The message type whose subject/schema the sample is decoded against. */
  type: ProtocolMessageType
  description: string
  bytes: Uint8Array
}

export function isMessageType(type: string): type is ProtocolMessageType {
  return Object.hasOwn(PROTOCOL_MESSAGES, type)
}

export function schemaOf(type: ProtocolMessageType): z.ZodType {
  return PROTOCOL_MESSAGES[type]
}

function listJson(kind: 'valid' | 'invalid'): string[] {
  return readdirSync(`${FIXTURES_DIR}${kind}`)
    .filter((file) => file.endsWith('.json'))
    .sort()
}

function read(kind: 'valid' | 'invalid', file: string): Uint8Array {
  const buffer = readFileSync(`${FIXTURES_DIR}${kind}/${file}`)
  return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength)
}

/** `valid/<type>.json` or `valid/<type>__<description>.json`. Throws on a name that breaks the convention. */
export function validFixtures(): ValidFixture[] {
  return listJson('valid').map((file) => {
    const parts = file.slice(0, -'.json'.length).split('__')
    const [type, description, ...rest] = parts
    if (type === undefined || !isMessageType(type) || rest.length > 0) {
      throw new Error(`valid/${file}: expected "<type>.json" or "<type>__<description>.json" with a type of PROTOCOL_MESSAGES`)
    }
    return { file, type, description, bytes: read('valid', file) }
  })
}

/** `invalid/<code>__<type>__<description>.json`. Throws on a name that breaks the convention. */
export function invalidFixtures(): InvalidFixture[] {
  return listJson('invalid').map((file) => {
    const parts = file.slice(0, -'.json'.length).split('__')
    const [code, type, description] = parts
    if (
      parts.length !== 3 ||
      code === undefined ||
      !(PROTOCOL_ERROR_CODES as readonly string[]).includes(code) ||
      type === undefined ||
      !isMessageType(type) ||
      !description
    ) {
      throw new Error(`invalid/${file}: expected "<PROTOCOL_CODE>__<type>__<description>.json"`)
    }
    return { file, code: code as ProtocolErrorCode, type, description, bytes: read('invalid', file) }
  })
}

export function fixtureJson(fixture: { bytes: Uint8Array }): Record<string, unknown> {
  return JSON.parse(new TextDecoder().decode(fixture.bytes)) as Record<string, unknown>
}

export function readDoc(): string {
  return readFileSync(DOC_PATH, 'utf8')
}

/** The fenced code blocks of a Markdown text, with their info string (`json`, `nats`, `text`...). */
export function codeBlocks(markdown: string): { lang: string; body: string; line: number }[] {
  const blocks: { lang: string; body: string; line: number }[] = []
  const lines = markdown.split('\n')
  for (let i = 0; i < lines.length; i++) {
    // The whole info string is the block's `lang` (`json signing-input` is not a `json` example), so
    // a fence with one does not shift which fences open and which close the blocks after it.
    const open = /^```(\S*(?:[ \t]+\S+)*)[ \t]*$/.exec(lines[i] as string)
    if (!open) continue
    const start = i
    const body: string[] = []
    for (i++; i < lines.length && !/^```\s*$/.test(lines[i] as string); i++) body.push(lines[i] as string)
    blocks.push({ lang: open[1] ?? '', body: body.join('\n'), line: start + 1 })
  }
  return blocks
}

/** One operation of a NATS text-protocol transcript, with its header and payload lines. */
export interface TranscriptFrame {
  from: 'C' | 'S'
  op: string
  args: string[]
  /** Header lines (without the terminating empty line), for HPUB/HMSG. */
  headers: string[]
  payload: string
  /** Exactly the bytes on the wire, CRLF line ends included. */
  raw: string
}

/**
 * Parses a transcript written as `C: <line>` / `S: <line>` (client / server; a bare `C:` or `S:`
 * is an empty line). Every byte count is checked against the lines that follow; a mismatch is
 * reported in `problems` rather than thrown.
 */
export function parseTranscript(text: string): { frames: TranscriptFrame[]; problems: string[] } {
  const lines = text.split('\n').map((line, i) => {
    const match = /^([CS]):(?: (.*))?$/.exec(line)
    if (!match) throw new Error(`transcript line ${i + 1} must start with "C: " or "S: ": ${line}`)
    return { from: match[1] as 'C' | 'S', text: match[2] ?? '' }
  })
  const frames: TranscriptFrame[] = []
  const problems: string[] = []
  for (let i = 0; i < lines.length; i++) {
    const { from, text: line } = lines[i] as (typeof lines)[number]
    const args = line.split(/ +/)
    const op = args.shift() as string
    const frame: TranscriptFrame = { from, op, args, headers: [], payload: '', raw: `${line}\r\n` }
    frames.push(frame)
    if (op !== 'PUB' && op !== 'MSG' && op !== 'HPUB' && op !== 'HMSG') continue
    const withHeaders = op.startsWith('H')
    const total = Number(args.at(-1))
    const headerBytes = withHeaders ? Number(args.at(-2)) : 0
    // The lines of the same sender that hold the announced bytes plus the final CRLF.
    let consumed = 0
    const body: string[] = []
    while (consumed < total + 2 && lines[i + 1]?.from === from) {
      i++
      const next = (lines[i] as (typeof lines)[number]).text
      body.push(next)
      consumed += Buffer.byteLength(next) + 2
    }
    frame.raw += body.map((b) => `${b}\r\n`).join('')
    if (consumed !== total + 2) {
      problems.push(`"${line}": announces ${total} bytes, the lines that follow hold ${consumed - 2}`)
      continue
    }
    if (withHeaders) {
      let headerConsumed = 0
      let h = 0
      while (headerConsumed < headerBytes && h < body.length) headerConsumed += Buffer.byteLength(body[h++] as string) + 2
      if (headerConsumed !== headerBytes || body[h - 1] !== '') {
        problems.push(`"${line}": announces ${headerBytes} header bytes (ending with an empty line), found ${headerConsumed}`)
        continue
      }
      frame.headers = body.slice(0, h - 1)
      frame.payload = body.slice(h).join('\r\n')
    } else {
      frame.payload = body.join('\r\n')
    }
  }
  return { frames, problems }
}

import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import {
  BusClosedError,
  BusNoRespondersError,
  BusPayloadTooLargeError,
  BusTimeoutError,
  DurableConsumerConflictError,
  DurableSubjectError,
  InvalidSubjectError,
} from '../src/bus/errors.ts'
import {
  AbortedError,
  asError,
  BudgetExceededError,
  ConfigError,
  ErrorCode,
  HookError,
  MaxTurnsExceededError,
  ProviderError,
  QuestionTimeoutError,
  RunCancelledError,
  serializeError,
  TimeoutError,
} from '../src/errors.ts'
import { type Instrumentation, Instruments } from '../src/instrumentation.ts'
import { finishCall } from '../src/store/ledger.ts'

describe('ErrorCode', () => {
  it('names every code the core error classes carry', () => {
    const thrown = [
      new HookError('beforeTurn', new Error('x')),
      new MaxTurnsExceededError(3),
      new RunCancelledError('asked to'),
      new ProviderError('down', { retryable: true }),
      new ConfigError('bad'),
      new AbortedError(),
      new TimeoutError('slow'),
      new BudgetExceededError('spent'),
      new QuestionTimeoutError(1_000),
      new BusTimeoutError('a.b', 10),
      new BusNoRespondersError('a.b'),
      new BusPayloadTooLargeError('a.b', 2, 1),
      new BusClosedError('publish'),
      new InvalidSubjectError('a b', 'has a space'),
      new DurableSubjectError('a.b', ['c.d']),
      new DurableConsumerConflictError('d', 'a.b', 'c.d'),
    ]
    const codes = new Set<string>(Object.values(ErrorCode))
    for (const error of thrown) expect(codes, error.name).toContain(error.code)
  })

  it('keys each code by its own name', () => {
    for (const [key, code] of Object.entries(ErrorCode)) expect(code).toBe(key)
  })

  it('names every code the packages throw or report (read from their sources)', () => {
    const codes = new Set<string>(Object.values(ErrorCode))
    const missing = codesInSources().filter(({ code }) => !codes.has(code))
    expect(missing).toEqual([])
  })

  it('marks an unknown throwable with UNKNOWN_ERROR', () => {
    expect(serializeError('boom').code).toBe(ErrorCode.UNKNOWN_ERROR)
  })
})

describe('what the core throws is a SignalboxError', () => {
  it('a ledger finishing a call it never started: INTERNAL_ERROR', () => {
    expect(() => finishCall([], 'call_1', { output: 'x', isError: false, outcome: 'executed' }, 1)).toThrow(
      expect.objectContaining({ code: ErrorCode.INTERNAL_ERROR }),
    )
  })

  it('an instrumentation without around(): CONFIG_INVALID', () => {
    expect(() => new Instruments().attach({} as Instrumentation)).toThrow(
      expect.objectContaining({ code: ErrorCode.CONFIG_INVALID }),
    )
  })

  it('a thrown string, as an error: UNKNOWN_ERROR quoting it; an error stays itself', () => {
    expect(asError('boom')).toMatchObject({ code: ErrorCode.UNKNOWN_ERROR, message: 'boom', cause: 'boom' })
    const error = new TypeError('x')
    expect(asError(error)).toBe(error)
  })
})

describe('QuestionTimeoutError', () => {
  it('carries a stable code and the deadline that passed', () => {
    const error = new QuestionTimeoutError(30_000)
    expect(error).toMatchObject({ code: 'QUESTION_TIMEOUT', name: 'QuestionTimeoutError', details: { timeoutMs: 30_000 } })
  })
})

const PACKAGES = fileURLToPath(new URL('../..', import.meta.url))
/** Where a code is written: `code: 'X'`, `new SomeError('X'`, `super('X'`. */
const CODE_AT = [
  /\bcode:\s*'([A-Z][A-Z0-9_]+)'/g,
  /\bnew\s+\w*Error\(\s*'([A-Z][A-Z0-9_]+)'/g,
  /\bsuper\(\s*'([A-Z][A-Z0-9_]+)'/g,
]

function codesInSources(): { code: string; file: string }[] {
  const found: { code: string; file: string }[] = []
  for (const pkg of readdirSync(PACKAGES)) {
    const src = path.join(PACKAGES, pkg, 'src')
    let files: string[]
    try {
      files = readdirSync(src, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'))
    } catch {
      continue
    }
    for (const file of files) {
      const text = readFileSync(path.join(src, file), 'utf8')
      for (const pattern of CODE_AT) {
        for (const match of text.matchAll(pattern)) found.push({ code: match[1] as string, file: `${pkg}/src/${file}` })
      }
    }
  }
  expect(found.length).toBeGreaterThan(50)
  return found
}

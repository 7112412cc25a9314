import { describe, expect, it } from 'vitest'
import { InvalidSubjectError } from '../../src/bus/errors.ts'
import {
  assertPublishSubject,
  assertSubscribeSubject,
  assertToken,
  createSubjects,
  encodeEventType,
  subjectCovers,
  subjectMatches,
} from '../../src/bus/subjects.ts'

describe('subjectMatches', () => {
  it.each([
    ['a.b.c', 'a.b.c', true],
    ['a.b.c', 'a.b', false],
    ['a.b', 'a.b.c', false],
    ['a.*.c', 'a.b.c', true],
    ['a.*.c', 'a.b.x.c', false],
    ['a.*', 'a', false],
    ['*', 'a', true],
    ['*.*', 'a', false],
    ['a.>', 'a.b', true],
    ['a.>', 'a.b.c.d', true],
    ['a.>', 'a', false],
    ['>', 'a.b', true],
    ['a.*.>', 'a.b', false],
    ['a.*.>', 'a.b.c', true],
    ['x.agents.*.events.>', 'x.agents.a1.events.tool_end', true],
    ['x.agents.*.events.>', 'x.agents.a1.steer', false],
  ])('%s matches %s: %s', (pattern, subject, expected) => {
    expect(subjectMatches(pattern, subject)).toBe(expected)
  })
})

describe('subjectCovers', () => {
  it.each([
    ['a.>', 'a.b', true],
    ['a.>', 'a.*', true],
    ['a.>', 'a.>', true],
    ['a.>', 'a', false],
    ['a.*', 'a.>', false],
    ['a.*.c', 'a.*.c', true],
    ['a.b.c', 'a.*.c', false],
    ['a.*.steer', 'a.x.steer', true],
    ['a.*.steer', 'a.x.steer.y', false],
    ['>', 'a.>', true],
  ])('%s covers %s: %s', (pattern, subject, expected) => {
    expect(subjectCovers(pattern, subject)).toBe(expected)
  })
})

describe('assertToken', () => {
  it.each(['', 'a.b', 'a*', '>', 'a b', 'tab\t', 'x'.repeat(129)])('rejects %j, naming the token', (token) => {
    let error: unknown
    try {
      assertToken(token)
    } catch (e) {
      error = e
    }
    expect(error).toBeInstanceOf(InvalidSubjectError)
    expect((error as InvalidSubjectError).token).toBe(token)
    expect((error as InvalidSubjectError).code).toBe('SUBJECT_INVALID')
  })

  it('accepts ids, names and 128 characters', () => {
    for (const token of ['agent-1', 'run_0f3a', 'get_weather', 'x'.repeat(128), 'Ünïcode']) expect(assertToken(token)).toBe(token)
  })
})

describe('createSubjects', () => {
  const s = createSubjects()
  it('builds the documented layout', () => {
    expect(s.approvals('a1')).toBe('signalbox.v1.approvals.a1')
    expect(s.approvalDecisions('a1')).toBe('signalbox.v1.approvals.a1.decisions')
    expect(s.ask('a1')).toBe('signalbox.v1.ask.a1')
    expect(s.answers('a1')).toBe('signalbox.v1.ask.a1.answers')
    expect(s.steer('a1')).toBe('signalbox.v1.agents.a1.steer')
    expect(s.control('a1')).toBe('signalbox.v1.agents.a1.control')
    expect(s.tool('get_weather')).toBe('signalbox.v1.tools.get_weather')
    expect(s.events('a1', 'tool.end')).toBe('signalbox.v1.agents.a1.events.tool_end')
    expect(s.events('a1')).toBe('signalbox.v1.agents.a1.events.>')
    expect(s.eventsAll()).toBe('signalbox.v1.agents.*.events.>')
    expect(s.inspect('rt1')).toBe('signalbox.v1.inspect.rt1')
    expect(s.directory()).toBe('signalbox.v1.directory')
    expect(createSubjects('t1.v1').control('a')).toBe('t1.v1.agents.a.control')
  })

  it('an event type never adds tokens', () => {
    expect(encodeEventType('approval.request.sent')).toBe('approval_request_sent')
    expect(() => encodeEventType('tool.*')).toThrow(InvalidSubjectError)
  })

  it('refuses ids that would widen or redirect a subject', () => {
    for (const id of ['*', '>', 'a.b', '', 'a b']) {
      expect(() => s.steer(id), id).toThrow(InvalidSubjectError)
      expect(() => s.tool(id), id).toThrow(InvalidSubjectError)
    }
    expect(() => createSubjects('bad..prefix')).toThrow(InvalidSubjectError)
  })

  it('without an agent id, the wildcard over every agent: subscribe only', () => {
    expect(s.approvals()).toBe('signalbox.v1.approvals.*')
    expect(s.approvalDecisions()).toBe('signalbox.v1.approvals.*.decisions')
    expect(s.ask()).toBe('signalbox.v1.ask.*')
    expect(s.answers()).toBe('signalbox.v1.ask.*.answers')
    expect(s.alive()).toBe('signalbox.v1.agents.*.alive')
    expect(s.inspect()).toBe('signalbox.v1.inspect.*')
    for (const wildcard of [s.approvals(), s.answers(), s.alive()]) {
      expect(assertSubscribeSubject(wildcard)).toBe(wildcard)
      expect(() => assertPublishSubject(wildcard)).toThrow(InvalidSubjectError)
    }
    // An id is still one literal token: `*` is never taken from the caller.
    for (const id of ['*', '>', 'a.b', '']) expect(() => s.approvals(id), id).toThrow(InvalidSubjectError)
  })
})

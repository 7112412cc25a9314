/**
 * The terminal reviewer and answerer over plain streams (what a pipe gives it): the screens, the
 * y/n and reason flow, one prompt at a time, and what is printed when a prompt goes away.
 * The real-terminal test is test/cli/review-tty.test.ts.
 */
import { PassThrough } from 'node:stream'
import { RequestWithdrawnError } from '@signalbox/actors'
import { AbortedError, type ApprovalRequest, type Question } from '@signalbox/core'
import { afterEach, describe, expect, it } from 'vitest'
import { createColorizer } from '../src/output.ts'
import { createPrompter, type Prompter } from '../src/prompter.ts'
import { createReviewConsole } from '../src/review-console.ts'

const c = createColorizer(false)
let prompter: Prompter | undefined

afterEach(() => prompter?.close())

function setup(options: { auto?: 'approve' | 'deny'; autoAnswer?: string } = {}) {
  const input = new PassThrough()
  let screen = ''
  const waiters = new Set<() => void>()
  const output = Object.assign(new PassThrough(), {
    write(chunk: string | Uint8Array) {
      screen += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8')
      for (const waiter of [...waiters]) waiter()
      return true
    },
  })
  prompter = createPrompter({ input, output })
  const ui = createReviewConsole({ c, out: { line: (text) => output.write(`${text}\n`) }, name: 'tina', prompter, ...options })
  const waitFor = (text: string, from = 0) =>
    new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ${JSON.stringify(text)} on screen:\n${screen}`)), 5_000)
      const check = () => {
        if (screen.indexOf(text, from) >= 0) {
          clearTimeout(timer)
          waiters.delete(check)
          resolve(screen)
        }
      }
      waiters.add(check)
      check()
    })
  return { ui, input, waitFor, screen: () => screen }
}

let seq = 0
function request(toolName: string, args: unknown, deadlineInMs = 60_000): ApprovalRequest {
  seq++
  const now = Date.now()
  return {
    requestId: `request_${seq}`,
    agentId: 'payer',
    runId: 'run_1',
    runPath: [],
    callId: `call_${seq}`,
    toolName,
    arguments: args,
    digest: `sha256:${'ab'.repeat(32)}`,
    deadline: now + deadlineInMs,
    requestedAt: now,
  }
}

describe('the terminal reviewer', () => {
  it('shows the exact call and approves on y', async () => {
    const { ui, input, waitFor } = setup()
    const r = request('send_payment', { to: 'alice', amount: 42 })
    const decided = ui.reviewer.review(r, { signal: new AbortController().signal })
    const screen = await waitFor('Approve send_payment? [y/n] ')
    expect(screen).toContain('│ agent      payer\n│ run        run_1\n│ call       call_')
    expect(screen).toContain(
      '│ tool       send_payment\n│ arguments  {\n│              "to": "alice",\n│              "amount": 42\n│            }',
    )
    expect(screen).toContain(`│ digest     ${r.digest}`)
    expect(screen).toMatch(/│ time left {2}(1 min 0 s|59 s) \(until \d\d:\d\d:\d\d\.\d{3}\)/)
    input.write('y\n')
    expect(await decided).toMatchObject({
      requestId: r.requestId,
      callId: r.callId,
      digest: r.digest,
      approved: true,
      reviewer: 'tina',
    })
  })

  it('says what the tool does and what led to the call, when the request tells', async () => {
    const { ui, input, waitFor } = setup()
    const r = {
      ...request('drop_claw', {}),
      description: 'Drops the claw where it is. Irreversible.',
      context: { input: 'Win me the teddy bear', lastText: 'The claw is over the teddy bear: dropping it.' },
    }
    const decided = ui.reviewer.review(r, { signal: new AbortController().signal })
    const screen = await waitFor('Approve drop_claw? [y/n] ')
    expect(screen).toContain('│ tool       drop_claw\n│ about      "Drops the claw where it is. Irreversible."\n│ arguments  {}')
    expect(screen).toContain('│ asked      "Win me the teddy bear"\n│ model said "The claw is over the teddy bear: dropping it."')
    input.write('y\n')
    await decided
  })

  it('asks again on anything but y/n, and takes a reason on n', async () => {
    const { ui, input, waitFor, screen } = setup()
    const decided = ui.reviewer.review(request('drop_claw', {}), { signal: new AbortController().signal })
    await waitFor('[y/n] ')
    input.write('maybe\n')
    await waitFor('Type y (run it) or n (deny it)')
    input.write('N\n')
    await waitFor('Reason (the model reads it): ')
    input.write('  not the polar bear  \n')
    const decision = await decided
    expect(decision).toMatchObject({ approved: false, reason: 'not the polar bear' })
    expect(screen().match(/Approve drop_claw\?/g)).toHaveLength(2)
  })

  it('one prompt at a time: the second request is shown only after the first is decided', async () => {
    const { ui, input, waitFor, screen } = setup()
    const signal = new AbortController().signal
    const first = ui.reviewer.review(request('first_tool', {}), { signal })
    const second = ui.reviewer.review(request('second_tool', {}), { signal })
    await waitFor('Approve first_tool?')
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(screen()).not.toContain('second_tool')
    input.write('y\n')
    await first
    const at = screen().length
    await waitFor('Approve second_tool?', at)
    input.write('n\n')
    await waitFor('Reason', at)
    input.write('\n')
    expect(await second).toMatchObject({ approved: false })
    expect((await second).reason).toBeUndefined()
  })

  it('a request withdrawn while it waits its turn is never shown; one that expires on screen says so', async () => {
    const { ui, input, waitFor, screen } = setup()
    const holding = ui.reviewer.review(request('holding', {}), { signal: new AbortController().signal })
    const queued = new AbortController()
    const waiting = ui.reviewer.review(request('queued_tool', {}), { signal: queued.signal })
    queued.abort(new AbortedError('settled elsewhere'))
    await expect(waiting).rejects.toThrow('settled elsewhere')
    await waitFor('Approve holding?')
    const expiring = new AbortController()
    input.write('y\n')
    await holding
    const r = request('slow_tool', { n: 1 }, 200)
    const pending = ui.reviewer.review(r, { signal: expiring.signal })
    await waitFor('Approve slow_tool?')
    setTimeout(() => expiring.abort(new AbortedError('the request expired')), 250)
    await expect(pending).rejects.toThrow('expired')
    expect(screen()).toContain('⏱ timed out: slow_tool (call_')
    expect(screen()).toContain('nobody decided by the deadline, so the agent denies it by default')
    expect(screen()).not.toContain('queued_tool')
  })

  it('--auto decides without reading the terminal, and prints what it decided on', async () => {
    const { ui, screen } = setup({ auto: 'deny' })
    const decision = await ui.reviewer.review(request('wire_money', { amount: 1 }), { signal: new AbortController().signal })
    expect(decision).toMatchObject({ approved: false, reason: 'denied automatically by the reviewer (--auto deny)' })
    expect(screen()).toContain('│ tool       wire_money')
    ui.decided(request('wire_money', {}), decision)
    expect(screen()).toMatch(/✘ denied wire_money \(call_\d+, agent payer, run run_1\) by tina: "denied automatically/)
  })

  it('prints decisions made by another reviewer', () => {
    const { ui, screen } = setup()
    const r = request('drop_claw', {})
    ui.decided(
      r,
      {
        requestId: r.requestId,
        callId: r.callId,
        digest: r.digest,
        approved: true,
        reviewer: 'bob',
        decidedAt: r.requestedAt + 1500,
      },
      { elsewhere: true },
    )
    expect(screen()).toContain('✔ approved drop_claw (call_')
    expect(screen()).toContain('by bob (another reviewer) · 1.5 s')
  })
})

describe('the terminal answerer', () => {
  const question = (text: string): Question => ({
    questionId: `question_${++seq}`,
    agentId: 'claw',
    runId: 'run_1',
    runPath: [],
    callId: 'call_1',
    question: text,
    deadline: Date.now() + 60_000,
    askedAt: Date.now(),
  })

  it('shows the question and takes a non-empty answer', async () => {
    const { ui, input, waitFor } = setup()
    const answered = ui.answerer.answer(question('Which bear?'), { signal: new AbortController().signal })
    await waitFor('│ Which bear?')
    await waitFor('Answer: ')
    input.write('\n')
    await waitFor('Type an answer for the agent')
    input.write('The polar bear!\n')
    expect(await answered).toMatchObject({ answer: 'The polar bear!', answeredBy: 'tina' })
  })

  it('--answer answers by itself', async () => {
    const { ui, screen } = setup({ auto: 'approve', autoAnswer: '42' })
    expect(await ui.answerer.answer(question('How much?'), { signal: new AbortController().signal })).toMatchObject({
      answer: '42',
    })
    expect(screen()).toContain('│ How much?')
  })

  it('a question the agent withdraws leaves the prompt, saying by whom, and is not reported as unanswered', async () => {
    const { ui, waitFor, screen } = setup()
    const q = question('Which prize?')
    const asking = new AbortController()
    const pending = ui.answerer.answer(q, { signal: asking.signal })
    await waitFor('Answer: ')
    asking.abort(new RequestWithdrawnError('withdrawn'))
    await expect(pending).rejects.toThrow('withdrew')
    ui.questionWithdrawnByAgent(q, { reason: 'the run was cancelled (wrong prize)', by: 'carol' })
    expect(screen()).toContain('↩ withdrawn by carol: "Which prize?" (claw): the run was cancelled (wrong prize)')
    expect(screen()).not.toContain('no answer')
  })
})

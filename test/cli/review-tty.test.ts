/**
 * `signalbox review` as a person uses it: in a real pseudo-terminal (tmux), reading the screen and
 * typing answers. The agent runs in this process over the shared NATS server (its own prefix),
 * against the scripted model over HTTP, so the test sees what the model was sent.
 */
import { busAuditLog, type ReviewerService, readAudit, remoteReviewer, serveReviewer } from '@signalbox/actors'
import { connectNatsBus, type NatsBus } from '@signalbox/actors/nats'
import { type AgentEvent, createAgent, OpenAIProvider, policyReviewer, type RunResult, tool } from '@signalbox/core'
import { createSubjects, type Subjects } from '@signalbox/core/bus'
import { type ScriptedModelServer, startScriptedModelServer } from '@signalbox/core/testing'
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { uniquePrefix } from '../support/env.ts'
import { lastTool, lastUser } from './fixtures/expect.ts'
import { busArgs, cleanupAll, deleteStream, NATS_URL, SIGNALBOX, stopTmuxServer, TmuxSession, until } from './support.ts'

const REASON = 'Mallory is not on the payee list; ask the treasurer first'

let prefix: string
let bus: NatsBus | undefined
let subjects: Subjects
let model: ScriptedModelServer | undefined
let robots: ReviewerService | undefined
const closers: (() => void)[] = []

beforeEach(() => {
  prefix = uniquePrefix()
  subjects = createSubjects(prefix)
})

afterEach(async () => {
  robots?.close()
  robots = undefined
  for (const close of closers.splice(0)) close()
  await cleanupAll()
  await model?.close()
  model = undefined
  await bus?.close()
  bus = undefined
  await deleteStream(prefix)
})

afterAll(stopTmuxServer)

/** The payment agent, in this process, asking reviewers on the bus. */
async function startPayer(
  script: Parameters<typeof startScriptedModelServer>[0]['scripts'][string],
  options: { approvalTimeoutMs?: number } = {},
) {
  bus ??= await connectNatsBus({ servers: NATS_URL, prefix, name: 'review-tty-agent' })
  model = await startScriptedModelServer({ scripts: { pay: script } })
  const executed: { to: string; amount: number; memo: string }[] = []
  const sendPayment = tool({
    name: 'send_payment',
    description: 'Send money. Irreversible.',
    schema: z.object({ to: z.string(), amount: z.number(), memo: z.string() }),
    needsApproval: true,
    execute: (args) => {
      executed.push(args)
      return `sent ${args.amount} to ${args.to}`
    },
  })
  const audit = busAuditLog({ bus, subjects })
  const reviewer = remoteReviewer({ bus, subjects, audit })
  closers.push(() => reviewer.close())
  const agent = createAgent({
    id: 'payer',
    provider: new OpenAIProvider({ baseURL: model.url, apiKey: 'scripted', model: 'pay' }),
    tools: [sendPayment],
    reviewer,
    audit,
    approvalTimeoutMs: options.approvalTimeoutMs ?? 30_000,
  })
  const events: AgentEvent[] = []
  agent.on('*', (event) => events.push(event))
  return { agent, executed, events }
}

async function startReviewerTerminal(): Promise<TmuxSession> {
  const terminal = new TmuxSession()
  await terminal.start([...SIGNALBOX, 'review', '--name', 'tina', '--agent', 'payer', ...busArgs(prefix)], {
    SIGNALBOX_NATS_URL: '',
  })
  await terminal.waitFor('reviewing approval requests for agent payer')
  return terminal
}

describe('signalbox review in a real terminal', () => {
  it('shows the exact call; y runs it; n plus a reason denies it and the model reads the reason', async () => {
    const terminal = await startReviewerTerminal()
    const { agent, executed, events } = await startPayer([
      {
        expect: lastUser('Pay the rent'),
        toolCalls: [{ name: 'send_payment', arguments: { to: 'alice', amount: 42, memo: 'rent for June' } }],
      },
      {
        expect: lastTool('sent 42 to alice'),
        toolCalls: [{ name: 'send_payment', arguments: { to: 'mallory', amount: 9000, memo: 'urgent!' } }],
      },
      { expect: lastTool(REASON), content: 'I paid alice. The payment to mallory was refused; I will ask the treasurer.' },
    ])
    const handle = agent.start('Pay the rent')

    // First request: the screen shows the exact call, pretty-printed, with its digest.
    const first = await terminal.waitFor('Approve send_payment? [y/n]')
    const requested = events.find(
      (e): e is Extract<AgentEvent, { type: 'approval.requested' }> => e.type === 'approval.requested',
    )
    expect(requested).toBeDefined()
    expect(first).toContain('approval requested')
    expect(first).toMatch(/agent\s+payer/)
    expect(first).toContain(`run        ${handle.runId}`)
    expect(first).toMatch(/tool\s+send_payment/)
    expect(first).toContain(
      `arguments  {\n│              "to": "alice",\n│              "amount": 42,\n│              "memo": "rent for June"\n│            }`,
    )
    expect(first).toContain(requested?.request.digest)
    expect(first).toMatch(/time left\s+\d+(\.\d)? s/)
    expect(executed).toEqual([]) // nothing runs before the yes

    await terminal.type('y')
    await until(() => executed.length === 1, 10_000, 'the approved payment')
    expect(executed[0]).toEqual({ to: 'alice', amount: 42, memo: 'rent for June' })

    // Second request: deny, with a reason.
    const second = await terminal.waitFor((screen) => screen.includes('"to": "mallory"') && screen.trimEnd().endsWith('[y/n]'))
    expect(second).toContain('✔ approved send_payment')
    expect(second).toContain('"amount": 9000')
    await terminal.type('n')
    await terminal.waitFor('Reason (the model reads it):')
    await terminal.type(REASON)

    const result: RunResult = await handle.result
    expect(result.status).toBe('done')
    expect(executed).toHaveLength(1) // mallory was never paid
    // The model read the reason, word for word, as the result of the denied call.
    const lastRequest = model?.requests.at(-1)
    const toolMessage = lastRequest?.messages.at(-1)
    expect(toolMessage?.role).toBe('tool')
    expect(toolMessage && 'content' in toolMessage ? toolMessage.content : '').toContain(`Denied by tina: ${REASON}`)
    model?.assertDone()

    const screen = await terminal.waitFor('✘ denied send_payment')
    expect(screen).toContain(`by tina: "${REASON}"`)

    // Both decisions are in the audit trail, as the reviewer typed them.
    const entries = await readAudit({ bus: bus as NatsBus, subjects, filter: { agentId: 'payer' } })
    expect(entries.map((e) => [e.kind, e.actor, e.decision, e.reason])).toEqual([
      ['approval.granted', 'tina', 'approved', undefined],
      ['approval.denied', 'tina', 'denied', REASON],
    ])
  })

  it('the time left counts down in the prompt while the person decides', async () => {
    const terminal = await startReviewerTerminal()
    const { agent, executed } = await startPayer(
      [
        {
          expect: lastUser('Pay erin'),
          toolCalls: [{ name: 'send_payment', arguments: { to: 'erin', amount: 3, memo: 'coffee' } }],
        },
        { expect: lastTool('sent 3 to erin'), content: 'Paid erin.' },
      ],
      { approvalTimeoutMs: 30_000 },
    )
    const handle = agent.start('Pay erin')
    const secondsLeft = (screen: string) => {
      const match = [...screen.matchAll(/└ (\d+) s left · Approve send_payment\? \[y\/n\]/g)].at(-1)
      return match ? Number(match[1]) : undefined
    }
    const first = secondsLeft(await terminal.waitFor((screen) => secondsLeft(screen) !== undefined))
    // The prompt is redrawn in place (once a second) with less time left; nothing was typed.
    const later = secondsLeft(await terminal.waitFor((screen) => (secondsLeft(screen) ?? Infinity) < (first ?? 0), 10_000))
    expect(later).toBeLessThan(first ?? 0)
    expect(executed).toEqual([])
    await terminal.type('y')
    expect((await handle.result).status).toBe('done')
    expect(executed.map((e) => e.to)).toEqual(['erin'])
  })

  it('shows a timeout, and a decision another reviewer made', async () => {
    const terminal = await startReviewerTerminal()
    const { agent, executed } = await startPayer(
      [
        {
          expect: lastUser('Pay twice'),
          toolCalls: [{ name: 'send_payment', arguments: { to: 'carol', amount: 7, memo: 'nobody answers' } }],
        },
        {
          expect: lastTool('denied by default'),
          toolCalls: [{ name: 'send_payment', arguments: { to: 'dave', amount: 8, memo: 'the robot decides' } }],
        },
        { expect: lastTool('sent 8 to dave'), content: 'Paid dave.' },
      ],
      { approvalTimeoutMs: 2_500 },
    )
    const handle = agent.start('Pay twice')

    // Nobody types: the prompt goes away at the deadline and the screen says so.
    await terminal.waitFor('"to": "carol"')
    await terminal.waitFor('⏱ timed out: send_payment', 10_000)

    // Another reviewer (a policy, in another group) decides the next one first.
    robots = serveReviewer({
      bus: bus as NatsBus,
      subjects,
      agentId: 'payer',
      group: 'robots',
      reviewer: policyReviewer(() => true, { name: 'robot' }),
    })
    await robots.ready
    const screen = await terminal.waitFor('by robot (another reviewer)', 15_000)
    expect(screen).toMatch(/✔ approved send_payment .*by robot \(another reviewer\)/)
    const result = await handle.result
    expect(result.status).toBe('done')
    expect(executed.map((e) => e.to)).toEqual(['dave'])
  })
})

import type { RequestOrigin, ServiceMode } from '@signalbox/actors'
import type { Answerer, ApprovalRequest, Question, Reviewer } from '@signalbox/core'
import { openBus, signerFrom, untilSignal } from '../bus.ts'
import { type Command, EXIT } from '../cli.ts'
import { whoIsAt } from '../identity.ts'
import type { Prompter } from '../prompter.ts'
import type { AutoVerdict } from '../review-console.ts'
import { commandTracing, OTLP_OPTIONS } from '../tracing.ts'
import { REVIEWER_TRUST_OPTIONS, reviewerKeyWarnings, reviewerTrustFrom, reviewerTrustLine } from '../trust-flags.ts'

export const review: Command = {
  name: 'review',
  summary: 'review approval requests (and answer questions) at this terminal',
  usage: 'review [--agent <id>] [--mode shared|broadcast] [--as <name>] [--auto approve|deny] [--answer <text>] [flags]',
  description: [
    'An interactive reviewer on the bus. Each approval request is shown with the exact call: agent,',
    'run, call id, tool, the arguments (pretty-printed), their digest and the time left. Type y to',
    'let it run, or n and a reason (the model reads it). Questions from ask-a-human tools are shown',
    'too; type the answer. One prompt at a time: requests wait their turn.',
    'Also prints what was decided, including decisions by other reviewers, and requests that timed',
    'out (the agent then denies by default).',
    'shared mode: reviewers split the requests (each decided once). broadcast: everyone sees every',
    'request and the first decision wins.',
    'With --nkey (or NATS_NKEY) every decision and answer is signed with that seed: agents with a',
    'trust policy apply nothing else. With --agent-key, a request is shown (as "verified") only if one',
    'of those keys signed it. A request whose digest does not match its arguments is refused: denied',
    'with that reason, never shown or approved, also with --auto approve.',
    "With --trust (the agents' own policy file will do), a decision or answer settles a request or",
    'question elsewhere only if signed by one of its reviewers or answerers (with --agent-key alone:',
    'none does): anyone can publish a forged one, and it must not make this terminal drop what it',
    'shows. The file\'s "agents" section works as --agent-key; without either, requests are not checked.',
  ].join('\n'),
  options: {
    agent: { type: 'string', valueName: '<id>', description: "only this agent's requests", default: 'every agent' },
    mode: {
      type: 'string',
      valueName: '<mode>',
      description: 'how reviewers share requests',
      choices: ['shared', 'broadcast'],
      default: 'shared (questions: broadcast)',
    },
    as: {
      type: 'string',
      valueName: '<name>',
      description: 'who you are (recorded in the audit); required when $USER is not set',
      default: '$USER',
      aliases: ['name'],
    },
    group: {
      type: 'string',
      valueName: '<group>',
      description: 'shared-mode group',
      default: 'reviewers (reviewers-<agent> with --agent)',
    },
    auto: {
      type: 'string',
      valueName: '<verdict>',
      description: 'decide without asking (unattended demos)',
      choices: ['approve', 'deny'],
    },
    answer: { type: 'string', valueName: '<text>', description: 'answer every question with this text instead of asking' },
    ...REVIEWER_TRUST_OPTIONS,
    ...OTLP_OPTIONS,
  },
  bus: 'required',
  maxArgs: 0,
  examples: [
    ['signalbox review --as tina', 'review every agent, interactively'],
    [
      'signalbox review --agent claw --auto approve --answer "The polar bear!"',
      'unattended: approve everything, answer questions',
    ],
    [
      'signalbox review --as tina --nkey tina.nk --trust trust.json',
      "sign with tina's key; only the policy's reviewers and answerers settle anything elsewhere",
    ],
  ],
  async run(context) {
    const { c } = context
    const agentId = context.values.agent as string | undefined
    const auto = context.values.auto as AutoVerdict | undefined
    const autoAnswer = context.values.answer as string | undefined
    const name = whoIsAt(context)
    const explicitMode = context.values.mode as ServiceMode | undefined
    const group = (context.values.group as string | undefined) ?? `reviewers${agentId ? `-${agentId}` : ''}`
    const answerGroup = (context.values.group as string | undefined) ?? `answerers${agentId ? `-${agentId}` : ''}`
    const answersQuestions = autoAnswer !== undefined || auto === undefined
    const needsTerminal = auto === undefined

    const [{ serveAnswerer, serveReviewer }, { createPrompter }, { createReviewConsole }] = await Promise.all([
      import('@signalbox/actors'),
      import('../prompter.ts'),
      import('../review-console.ts'),
    ])
    const signer = await signerFrom(context)
    const reviewerTrust = await reviewerTrustFrom(context, agentId)
    const { trust } = reviewerTrust
    const origins = new Map<string, RequestOrigin>()
    const tracing = await commandTracing(context, `signalbox-review-${name}`)
    const opened = await openBus(context, 'review', { waitForStream: true })
    const { subjects, url } = opened
    const bus = tracing ? tracing.bus(opened.bus) : opened.bus
    const stop = untilSignal(context.io.signal)
    const interrupt = () => process.kill(process.pid, 'SIGINT')
    let prompter: Prompter | undefined
    let inputEnded = false
    if (needsTerminal) {
      prompter = createPrompter({ input: context.io.stdin, output: context.io.stdout, onInterrupt: interrupt })
      prompter.onClose(() => {
        inputEnded = true
        interrupt()
      })
    }
    const out = {
      line: (text: string) => context.out(text),
      ...(context.global.json ? { json: (record: Record<string, unknown>) => context.out(JSON.stringify(record)) } : {}),
    }
    const ui = createReviewConsole({
      c,
      out,
      name,
      ...(prompter ? { prompter } : {}),
      ...(auto ? { auto } : {}),
      ...(autoAnswer !== undefined ? { autoAnswer } : {}),
      originOf: (requestId) => (reviewerTrust.checksRequests ? origins.get(requestId) : undefined),
    })
    const startedAt = Date.now()
    const requests = new Map<string, ApprovalRequest>()
    const questions = new Map<string, Question>()
    const ours = new Set<string>()
    const onError = (error: unknown) =>
      context.err(`${c.red('error')}: ${error instanceof Error ? error.message : String(error)}`)

    const traced = (reviewer: Reviewer) => (tracing ? tracing.reviewer(reviewer) : reviewer)
    const tracedAnswerer = (answerer: Answerer) => (tracing ? tracing.answerer(answerer) : answerer)
    const reviewers = serveReviewer({
      bus,
      subjects,
      ...(agentId ? { agentId } : {}),
      mode: explicitMode ?? 'shared',
      group,
      reviewer: traced({
        async review(request, options) {
          const decision = await ui.reviewer.review(request, options)
          ours.add(request.requestId)
          return decision
        },
      }),
      ...(signer ? { signer } : {}),
      ...(trust ? { trust } : {}),
      onRequest: (request, origin) => {
        requests.set(request.requestId, request)
        origins.set(request.requestId, origin)
      },
      onRefused: (request, reason) =>
        context.err(`${c.yellow('refused')} ${request.toolName} (${request.callId}, agent ${request.agentId}): ${reason}`),
      onDecision: (request, decision) => ui.decided(request, decision),
      onWithdrawn: (requestId, withdrawal) => {
        const seen = requests.get(requestId)
        if (seen) ui.withdrawnByAgent(seen, withdrawal)
      },
      onSettled: (requestId, decision) => {
        if (ours.has(requestId)) return
        const seen = requests.get(requestId)
        if (!seen && decision.decidedAt < startedAt) return // history from before this reviewer started
        ui.decided(seen, decision, { elsewhere: true })
      },
      onError,
    })
    const answerers = answersQuestions
      ? serveAnswerer({
          bus,
          subjects,
          ...(agentId ? { agentId } : {}),
          mode: explicitMode ?? 'broadcast',
          group: answerGroup,
          ...(signer ? { signer } : {}),
          // Only answers by the policy's answerers count as answered elsewhere (a forged one would drop the question).
          ...(trust ? { trust } : {}),
          answerer: tracedAnswerer({
            async answer(question, options) {
              const answer = await ui.answerer.answer(question, options)
              ours.add(question.questionId)
              return answer
            },
          }),
          onQuestion: (question) => questions.set(question.questionId, question),
          onWithdrawn: (questionId, withdrawal) => {
            const seen = questions.get(questionId)
            if (seen) ui.questionWithdrawnByAgent(seen, withdrawal)
          },
          onAnswer: (question, answer) => ui.answered(question, answer),
          onSettled: (questionId, answer) => {
            if (ours.has(questionId)) return
            const seen = questions.get(questionId)
            if (!seen && answer.answeredAt < startedAt) return
            ui.answered(seen, answer, { elsewhere: true })
          },
          onError,
        })
      : undefined

    try {
      await Promise.race([Promise.all([reviewers.ready, answerers?.ready]), stop.promise])
      const scope = agentId ? `agent ${agentId}` : 'every agent'
      const how = auto ? `deciding automatically: ${auto}` : 'asking you'
      const asks = answerers
        ? `answering questions${autoAnswer !== undefined ? ` with ${JSON.stringify(autoAnswer)}` : ''}`
        : 'not answering questions (--auto without --answer)'
      const ready = `reviewing approval requests for ${scope} on ${subjects.prefix} at ${url} as ${name} (${explicitMode ?? 'shared'}, ${how}); ${asks}; ${reviewerTrustLine(reviewerTrust)}. Ctrl-C to stop.`
      if (context.global.json) context.err(ready)
      else context.out(c.dim(ready))
      for (const warning of reviewerKeyWarnings(trust, signer, answerers !== undefined))
        context.err(`${c.yellow('warning')}: ${warning}`)
      await stop.promise
    } finally {
      stop.dispose()
      if (inputEnded) {
        const hint = context.io.stdin.isTTY ? '' : ' (no terminal: pass --auto approve|deny to review unattended)'
        context.err(`input ended${hint}: stopping; pending requests are left for other reviewers`)
      }
      reviewers.close()
      answerers?.close()
      prompter?.close()
      await bus.close()
      await tracing?.shutdown()
    }
    return EXIT.ok
  },
}

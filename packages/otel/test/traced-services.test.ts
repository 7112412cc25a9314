import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { type Answerer, type ApprovalRequest, decideApproval, type Question, type Reviewer } from '@signalbox/core'
import { describe, expect, it } from 'vitest'
import { traceAnswerer, traceReviewer } from '../src/index.ts'

const request = {
  requestId: 'request-1',
  agentId: 'claw',
  runId: 'run-1',
  runPath: [],
  callId: 'call-1',
  toolName: 'drop_claw',
  arguments: {},
  digest: 'sha256:x',
  deadline: 2_000,
  requestedAt: 1_000,
} as unknown as ApprovalRequest

function tracing() {
  const exporter = new InMemorySpanExporter()
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
  return { tracerProvider, spans: () => exporter.getFinishedSpans().map((span) => span.name) }
}

describe('traced reviewers and answerers', () => {
  it('a traced reviewer spans its reviews and passes open and recover through unchanged', async () => {
    const { tracerProvider, spans } = tracing()
    const opened: string[] = []
    const inTime = decideApproval(request, true, 'alice', 1_500)
    const reviewer: Reviewer = {
      open: async (r) => {
        opened.push(r.requestId)
      },
      review: async (r) => decideApproval(r, false, 'bob', 1_200),
      recover: async () => inTime,
    }
    const traced = traceReviewer(reviewer, { tracerProvider })
    const signal = new AbortController().signal
    await traced.open?.(request, { signal })
    expect(opened).toEqual(['request-1'])
    await expect(traced.recover?.(request, { signal })).resolves.toBe(inTime)
    await expect(traced.review(request, { signal })).resolves.toMatchObject({ approved: false, reviewer: 'bob' })
    expect(spans()).toEqual(['signalbox.review drop_claw'])
  })

  it('a reviewer without open or recover stays without them', () => {
    const { tracerProvider } = tracing()
    const traced = traceReviewer({ review: async (r) => decideApproval(r, true, 'alice', 1) }, { tracerProvider })
    expect(traced.open).toBeUndefined()
    expect(traced.recover).toBeUndefined()
  })

  it('a traced answerer passes recover through', async () => {
    const { tracerProvider } = tracing()
    const answer = { questionId: 'question-1', answer: 'the duck', answeredBy: 'bob', answeredAt: 1 }
    const answerer: Answerer = { answer: async () => answer, recover: async () => answer }
    const traced = traceAnswerer(answerer, { tracerProvider })
    const question = { questionId: 'question-1' } as Question
    await expect(traced.recover?.(question, { signal: new AbortController().signal })).resolves.toBe(answer)
  })
})

import type { Checkpoint } from '../store/index.ts'

const DIGEST = `sha256:${'a'.repeat(64)}`

/** A valid checkpoint of a run parked on an approval (for a store's tests); `overrides` replace its fields. */
export function sampleCheckpoint(overrides: Partial<Checkpoint> = {}): Checkpoint {
  const runId = overrides.runId ?? 'run_1'
  return {
    v: 2,
    type: 'run.checkpoint',
    runId,
    agentId: 'trains',
    runPath: [],
    status: 'waiting',
    snapshot: { status: 'active', value: { awaitingApproval: 'waiting' }, context: { turn: 2, messages: [] }, children: {} },
    transcript: { length: 3 },
    usage: { promptTokens: 30, completionTokens: 12, totalTokens: 42 },
    pending: {
      approvals: [
        {
          requestId: 'request_1',
          agentId: 'trains',
          runId,
          runPath: [],
          callId: 'call_1',
          toolName: 'drop_claw',
          arguments: { bay: 3 },
          digest: DIGEST,
          deadline: 1_700_000_060_000,
          requestedAt: 1_700_000_000_000,
        },
      ],
      questions: [],
    },
    appliedDecisions: [],
    steering: [{ text: 'use bay 4', from: 'ops', at: 1_700_000_010_000 }],
    ledger: [
      { state: 'started', callId: 'call_0', toolName: 'lookup', idempotencyKey: `${runId}:call_0`, startedAt: 1_700_000_000_000 },
    ],
    createdAt: 1_699_999_990_000,
    savedAt: 1_700_000_000_000,
    ...overrides,
  }
}

import * as root from '@signalbox/core'
import * as bus from '@signalbox/core/bus'
import * as internal from '@signalbox/core/internal'
import * as protocol from '@signalbox/core/protocol'
import * as store from '@signalbox/core/store'
import * as testing from '@signalbox/core/testing'
import { describe, expect, it } from 'vitest'
import manifest from '../package.json' with { type: 'json' }

// The public API is a contract: adding or removing a name here is a decision, not an accident.
describe('@signalbox/core public surface', () => {
  it('has exactly these entry points', () => {
    expect(Object.keys(manifest.exports).sort()).toEqual([
      '.',
      './bus',
      './internal',
      './protocol',
      './store',
      './testing',
      './testing/conformance',
    ])
  })

  it('root: what users write agents against', () => {
    expect(Object.keys(root).sort()).toEqual([
      'AGENT_EVENT_TYPES',
      'AUDIT_KINDS',
      'AbortedError',
      'Agent',
      'BudgetExceededError',
      'ConfigError',
      'ErrorCode',
      'FatalToolError',
      'HOOK_POINTS',
      'Handoff',
      'HookError',
      'MaxTurnsExceededError',
      'MemoryAuditLog',
      'OpenAIProvider',
      'OutputValidationError',
      'ProviderError',
      'RunCancelledError',
      'RunFailedError',
      'ScriptedAnswerer',
      'ScriptedReviewer',
      'SignalboxError',
      'TimeoutError',
      'ToolError',
      'allow',
      'askHumanTool',
      'askPerson',
      'createAgent',
      'decideApproval',
      'defaultRetryPolicy',
      'deny',
      'functionAnswerer',
      'handoff',
      'isAbortError',
      'jsonSchemaTool',
      'policyReviewer',
      'randomIds',
      'respond',
      'sequentialIds',
      'systemClock',
      'terminalAnswerer',
      'terminalReviewer',
      'tool',
    ])
  })

  it('/bus: the bus and its in-process transport', () => {
    expect(Object.keys(bus).sort()).toEqual([
      'BusClosedError',
      'BusError',
      'BusNoRespondersError',
      'BusPayloadTooLargeError',
      'BusTimeoutError',
      'DEFAULT_DIRECTORY_BUCKET',
      'DEFAULT_RUN_BUCKET',
      'DEFAULT_SUBJECT_PREFIX',
      'DEFAULT_USED_APPROVALS_BUCKET',
      'DurableConsumerConflictError',
      'DurableSubjectError',
      'InProcessBus',
      'InvalidSubjectError',
      'KV_BUCKETS',
      'ROLES',
      'SUBJECT_FAMILIES',
      'createInProcessBus',
      'createSubjects',
      'defaultDurableSubjects',
      'directoryBucket',
      'usedApprovalsBucket',
    ])
  })

  it('/protocol: the wire messages, the codec and the argument digest', () => {
    expect(Object.keys(protocol).sort()).toEqual([
      'AnswerMessage',
      'ApprovalAliveMessage',
      'ApprovalDecisionMessage',
      'ApprovalRequestMessage',
      'ApprovalWithdrawnMessage',
      'AuditMessage',
      'ControlReplyMessage',
      'ControlRequestMessage',
      'DirectoryEntryMessage',
      'ErrorMessage',
      'EventMessage',
      'PROTOCOL_MESSAGES',
      'PROTOCOL_VERSION',
      'ProtocolError',
      'QuestionMessage',
      'QuestionWithdrawnMessage',
      'RejectionMessage',
      'RunAcceptedMessage',
      'RunHeartbeatMessage',
      'RunRequestMessage',
      'RunResultMessage',
      'SteerMessage',
      'ToolCallMessage',
      'ToolCatalogMessage',
      'ToolDescribeMessage',
      'ToolDescriptionMessage',
      'ToolListMessage',
      'ToolResultMessage',
      'WireError',
      'callDigest',
      'canonicalJson',
      'decodeMessage',
      'encodeMessage',
      'errorMessage',
    ])
  })

  it('/store: durable runs (stores, checkpoint format, tool-call ledger)', () => {
    expect(Object.keys(store).sort()).toEqual(STORE_NAMES)
  })

  it('/testing: the scripted model', () => {
    expect(Object.keys(testing).sort()).toEqual([
      'ScriptedModelError',
      'ScriptedProvider',
      'SimulatedClock',
      'sampleCheckpoint',
      'startScriptedModelServer',
    ])
  })

  it('every error class exported answers is() (the check that works across copies of the package)', () => {
    const classes = [root, bus, protocol, store, testing].flatMap((entry) =>
      Object.values(entry).filter(
        (value): value is typeof root.SignalboxError =>
          typeof value === 'function' && value.prototype instanceof root.SignalboxError,
      ),
    )
    expect(classes.length).toBeGreaterThan(20)
    for (const errorClass of classes) expect(errorClass.is, errorClass.name).toBe(root.SignalboxError.is)
    expect(typeof root.SignalboxError.is).toBe('function')
  })

  it('keeps the helpers shared between packages out of every public entry point', () => {
    const internals = Object.keys(internal)
    expect(internals.length).toBeGreaterThan(0)
    for (const [name, entry] of Object.entries({ root, bus, protocol, testing })) {
      expect(
        Object.keys(entry).filter((n) => internals.includes(n)),
        name,
      ).toEqual([])
    }
    // Plumbing that no entry point offers at all.
    for (const entry of [root, bus, protocol, testing, internal]) {
      expect(Object.keys(entry)).not.toContain('EventEmitter')
    }
  })
})

const STORE_NAMES = [
  'AppliedDecision',
  'CHECKPOINT_VERSION',
  'Checkpoint',
  'CheckpointError',
  'FileRunStore',
  'LedgerEntry',
  'MemoryRunStore',
  'PendingApproval',
  'PendingQuestion',
  'RunLease',
  'RunParking',
  'RunStoreError',
  'StoreUnavailableError',
  'StoredRunStatus',
  'assembleTranscript',
  'claimRun',
  'decodeCheckpoint',
  'encodeCheckpoint',
  'matchesListing',
  'parkRun',
  'parseBatch',
  'pruneRuns',
]

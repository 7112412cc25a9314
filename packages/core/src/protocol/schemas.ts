import { z } from 'zod/v4'
import { NAME_PATTERN, NAME_RULE } from '../names.ts'
import { discriminatedUnion } from '../portable-zod.ts'
import { FINISHED_STATUSES } from '../run-status.ts'

/**
 * signalbox wire protocol, version 1. Every message on the bus is one JSON object with
 * `v: 1` and a `type`; nothing parses bus payloads outside this module. `docs/protocol.md`
 * is the normative description of these schemas.
 */
export const PROTOCOL_VERSION = 1

/** Ids travel in `Nats-Msg-Id` headers: no control characters (no header injection). */
const id = z
  .string()
  .min(1)
  .max(256)
  // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point
  .regex(/^[^\x00-\x1f\x7f]+$/, 'must not contain control characters')
/** A NATS subject token: ids that become part of a subject (run ids, component names). */
const token = z
  .string()
  .min(1)
  .max(128)
  // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point
  .regex(/^[^.*>\s\x00-\x1f\x7f]+$/, 'must not contain ".", "*", ">", whitespace or control characters')
/** Agent ids and tool names: what the chat-completions API and subjects both accept. */
const name = z.string().regex(NAME_PATTERN, `must be ${NAME_RULE}`)
const epochMs = z.number().int().nonnegative()
/** A call digest (§1.7): sha256 over the canonical JSON of the tool name and the arguments. */
const digest = z.string().regex(/^sha256:[0-9a-f]{64}$/)
const runPath = z.array(id).max(64)
/** Agent ids of the runs of a `runPath`, root first (child runs only). */
const agentPath = z.array(name).max(64)
/**
 * The sender's public nkey and its ed25519 signature (docs/protocol.md §17). Checked by the
 * receiver's trust policy; kept here so they survive decoding (unknown keys are stripped).
 */
const signed = {
  signer: z.string().max(128).optional(),
  signature: z.string().max(256).optional(),
}

export const WireError = z.object({
  code: z.string().min(1).max(128),
  message: z.string().max(4096),
  details: z.record(z.string(), z.unknown()).optional(),
})
export type WireError = z.infer<typeof WireError>

const envelope = <T extends string, S extends z.ZodRawShape>(type: T, shape: S) =>
  z.object({ v: z.literal(PROTOCOL_VERSION), type: z.literal(type), ...shape })

/** Agent → reviewers, on `approvals.<agent>`: the exact call that will run if approved. */
export const ApprovalRequestMessage = envelope('approval.request', {
  requestId: id,
  agentId: name,
  runId: id,
  runPath,
  agentPath: agentPath.optional(),
  callId: id,
  toolName: name,
  arguments: z.unknown(),
  digest,
  deadline: epochMs,
  requestedAt: epochMs,
  /** The tool's JSON Schema, so a reviewer can check an edit before sending it. Not in the digest. */
  parameters: z.record(z.string(), z.unknown()).optional(),
  /** The tool's description and what led to the call, for the reviewer. Not in the digest. */
  description: z.string().max(8192).optional(),
  context: z.object({ input: z.string().max(8192).optional(), lastText: z.string().max(8192).optional() }).optional(),
  /**
   * Set by an agent that keeps the request only in its process (no run store): it publishes
   * `approval.alive` for the request at this interval while it waits. Three missed: orphaned.
   */
  heartbeatMs: z.number().int().min(100).max(3_600_000).optional(),
  ...signed,
})
export type ApprovalRequestMessage = z.infer<typeof ApprovalRequestMessage>

/** Reviewer → agent, on `approvals.<agent>.decisions`. Must quote requestId, callId and digest. */
export const ApprovalDecisionMessage = envelope('approval.decision', {
  requestId: id,
  callId: id,
  digest,
  approved: z.boolean(),
  reason: z.string().max(4096).optional(),
  /** Approve with edited arguments: run the call with these instead (validated by the agent). */
  arguments: z.unknown().optional(),
  /** With `arguments`: the digest of the edited call, so a signature covers the edit. */
  editedDigest: digest.optional(),
  /** The request's deadline, quoted: until when the approval holds (a tool host that verifies checks it). */
  deadline: epochMs.optional(),
  reviewer: z.string().min(1).max(256),
  decidedAt: epochMs,
  ...signed,
})
export type ApprovalDecisionMessage = z.infer<typeof ApprovalDecisionMessage>

/** Agent → answerers, on `ask.<agent>`. */
export const QuestionMessage = envelope('question', {
  questionId: id,
  agentId: name,
  runId: id,
  runPath,
  agentPath: agentPath.optional(),
  callId: id,
  question: z.string().min(1).max(16_384),
  /** JSON Schema of the answer (the answer is that value as JSON text): answerers may show a form. */
  answerSchema: z.record(z.string(), z.unknown()).optional(),
  deadline: epochMs,
  askedAt: epochMs,
})
export type QuestionMessage = z.infer<typeof QuestionMessage>

/** Answerer → agent, on `ask.<agent>.answers`. */
export const AnswerMessage = envelope('answer', {
  questionId: id,
  answer: z.string().max(16_384),
  answeredBy: z.string().min(1).max(256),
  answeredAt: epochMs,
  ...signed,
})
export type AnswerMessage = z.infer<typeof AnswerMessage>

/** Anyone → agent, on `agents.<agent>.steer`: a correction for the next tool call. */
export const SteerMessage = envelope('steer', {
  /** Unique per correction: de-duplicates a retried publish. */
  steerId: id,
  text: z.string().min(1).max(16_384).regex(/\S/, 'must not be blank'),
  from: z.string().min(1).max(256),
  /** Aim at one run; without it every active run of the agent gets it. */
  runId: id.optional(),
  sentAt: epochMs,
  /** The agent it is for: signed steering names it, so it cannot be replayed at another agent. */
  agentId: name.optional(),
  ...signed,
})
export type SteerMessage = z.infer<typeof SteerMessage>

/** Request on `agents.<agent>.control`. */
export const ControlRequestMessage = discriminatedUnion('type', [
  envelope('control.cancel', {
    runId: id.optional(),
    reason: z.string().max(1024).optional(),
    from: z.string().min(1).max(256).optional(),
    /** Signed cancels name the agent and the time (docs/protocol.md §17). */
    agentId: name.optional(),
    sentAt: epochMs.optional(),
    ...signed,
  }),
  envelope('control.status', {}),
])
export type ControlRequestMessage = z.infer<typeof ControlRequestMessage>

export const ControlReplyMessage = envelope('control.reply', {
  agentId: name,
  runs: z.array(z.object({ runId: id, state: z.string(), turn: z.number().int().nonnegative() })),
  cancelled: z.array(id).optional(),
})
export type ControlReplyMessage = z.infer<typeof ControlReplyMessage>

/** Agent → tool host, request on `tools.<tool>` (queue group `signalbox-tools`). */
export const ToolCallMessage = envelope('tool.call', {
  callId: id,
  toolName: name,
  agentId: name,
  runId: id,
  arguments: z.unknown(),
  deadline: epochMs,
  /**
   * The signed `approval.decision` that approved this call, as the agent received it: a tool host
   * that verifies approvals checks it (§8.6). Decoded by that host, not here, so a bad one is
   * refused with the reason instead of failing the whole call.
   */
  approval: z.record(z.string(), z.unknown()).optional(),
})
export type ToolCallMessage = z.infer<typeof ToolCallMessage>

/** Tool host → agent, the reply to a `tool.call`. */
export const ToolResultMessage = envelope('tool.result', {
  callId: id,
  output: z.string(),
})
export type ToolResultMessage = z.infer<typeof ToolResultMessage>

/** Request on `tools.<tool>.describe`: what the model needs to know about a remote tool. */
export const ToolDescribeMessage = envelope('tool.describe', {})
export type ToolDescribeMessage = z.infer<typeof ToolDescribeMessage>
export const ToolDescriptionMessage = envelope('tool.description', {
  name,
  description: z.string().max(8192),
  parameters: z.record(z.string(), z.unknown()),
  needsApproval: z.boolean().optional(),
  timeoutMs: z.number().int().positive().optional(),
})
export type ToolDescriptionMessage = z.infer<typeof ToolDescriptionMessage>

/** Anyone → every tool host, on `tools`: which tools do you serve? */
export const ToolListMessage = envelope('tool.list', {})
export type ToolListMessage = z.infer<typeof ToolListMessage>
/** A tool host's answer: each tool it serves, described as `tool.describe` would. */
export const ToolCatalogMessage = envelope('tool.catalog', {
  /** The host (for logs; tools are addressed by name, never by host). */
  hostId: z.string().min(1).max(256).optional(),
  tools: z.array(ToolDescriptionMessage.omit({ v: true, type: true })).max(1000),
})
export type ToolCatalogMessage = z.infer<typeof ToolCatalogMessage>

/** Any reply that is a failure: bad input, unknown tool, a tool that threw. */
export const ErrorMessage = envelope('error', {
  error: WireError,
  /** The id the request carried, when it could be read. */
  inReplyTo: id.optional(),
})
export type ErrorMessage = z.infer<typeof ErrorMessage>

/** Agent → observers, on `agents.<agent>.events.<type>`: observe-only. */
export const EventMessage = envelope('event', {
  event: z.looseObject({ type: z.string(), agentId: name, runId: z.string(), at: epochMs }),
  /** Large fields were left out to fit the bus's maximum payload. */
  truncated: z.boolean().optional(),
})
export type EventMessage = z.infer<typeof EventMessage>

/** Written to `audit.<agent>.<kind>` (durable): who decided what, when, and what they saw. */
export const AuditMessage = envelope('audit', {
  // Loose: a field added later in v1 is kept, not stripped, so the writer's signature over it still verifies.
  entry: z.looseObject({
    /** See `AuditKind`; readers accept kinds added later in v1 (additive). */
    kind: z.string().min(1).max(128),
    agentId: name,
    runId: z.string(),
    runPath,
    callId: z.string().optional(),
    toolName: z.string().optional(),
    shown: z.unknown().optional(),
    digest: z.string().optional(),
    edited: z.unknown().optional(),
    editedDigest: z.string().optional(),
    decision: z.string().optional(),
    reason: z.string().optional(),
    actor: z.string(),
    /** The name the recorded message gave itself, when it is not the actor (the policy's name for the key that signed). */
    claimed: z.string().optional(),
    requestedAt: epochMs.optional(),
    decidedAt: epochMs,
    latencyMs: z.number().optional(),
    /** Approvals: when the agent applied the outcome, by its own clock. */
    releasedAt: epochMs.optional(),
    /** The signed message the entry records (decision, answer, steering), as received. */
    evidence: z.record(z.string(), z.unknown()).optional(),
    /** Public nkey of the party that wrote the entry, and its signature over the entry. */
    signer: z.string().optional(),
    signature: z.string().optional(),
  }),
})
export type AuditMessage = z.infer<typeof AuditMessage>

/** Published on `errors.<component>` when a message is rejected and there is nobody to reply to. */
export const RejectionMessage = envelope('rejection', {
  component: token,
  subject: z.string(),
  error: WireError,
  /** The first bytes of the rejected payload, for debugging. */
  sample: z.string().max(512),
  /** How many rejections this notice stands for (a summary under a flood); absent means one. */
  count: z.number().int().positive().optional(),
  at: epochMs,
})
export type RejectionMessage = z.infer<typeof RejectionMessage>

const wireMessage = z.object({
  role: z.enum(['system', 'user', 'assistant', 'tool']),
  content: z.string().nullable(),
  tool_calls: z
    .array(
      z.object({ id: z.string(), type: z.literal('function'), function: z.object({ name: z.string(), arguments: z.string() }) }),
    )
    .optional(),
  tool_call_id: z.string().optional(),
})

const usage = z.object({
  promptTokens: z.number().int().nonnegative(),
  completionTokens: z.number().int().nonnegative(),
  totalTokens: z.number().int().nonnegative(),
})

/** Request on `agents.<agent>.run` (queue group of the agent's hosts): start a run there. */
export const RunRequestMessage = envelope('run.request', {
  runId: token,
  agentId: name,
  /** A task, or a conversation handed over (hand-off). */
  input: z.union([z.string().min(1).max(262_144), z.array(wireMessage).min(1).max(1_000)]),
  parentRunId: id.optional(),
  runPath,
  /** Agent ids of the `runPath` runs (the parent agent last). */
  agentPath: agentPath.optional(),
  /** Budget left in the run tree: the child's own maxTurns is lowered to it. */
  maxTurns: z.number().int().positive().optional(),
  maxTokens: z.number().int().positive().optional(),
  /** The host cancels the run if no `run.heartbeat` arrives for this long (orphan guard). */
  leaseMs: z.number().int().positive().optional(),
  requestedBy: z.string().max(256).optional(),
  /**
   * The limits set on the tree's root, carried to every host that runs one of its runs; each
   * host applies them on top of its own (the lower of each).
   */
  limits: z
    .object({
      maxDepth: z.number().int().nonnegative().optional(),
      maxTotalTurns: z.number().int().positive().optional(),
      maxTotalTokens: z.number().int().positive().optional(),
      maxTotalRuns: z.number().int().positive().optional(),
    })
    .optional(),
  /**
   * A parent re-attaching after a crash or a takeover: answer only for a run that exists (running
   * on this host, or stored), never start it; `RUN_NOT_FOUND` otherwise.
   */
  check: z.literal(true).optional(),
})
export type RunRequestMessage = z.infer<typeof RunRequestMessage>

/** Reply to `run.request`: the run started on this host. */
export const RunAcceptedMessage = envelope('run.accepted', {
  runId: token,
  agentId: name,
  hostId: z.string().min(1).max(256),
})
export type RunAcceptedMessage = z.infer<typeof RunAcceptedMessage>

/** On `runs.<runId>.result` (durable): how a remote run ended. */
export const RunResultMessage = envelope('run.result', {
  runId: token,
  agentId: name,
  status: z.enum(FINISHED_STATUSES),
  output: z.string(),
  error: WireError.optional(),
  turns: z.number().int().nonnegative(),
  usage,
  /** Set when the run handed the conversation to another agent. */
  handoff: z.object({ to: name, reason: z.string().max(4096).optional(), messages: z.array(wireMessage) }).optional(),
  hostId: z.string().min(1).max(256),
  /** Runs in the run's subtree, itself included (the parent counts them against the tree). */
  runs: z.number().int().positive().optional(),
})
export type RunResultMessage = z.infer<typeof RunResultMessage>

/** On `heartbeats.<runId>` from the parent (plain publish): the child is still wanted. */
export const RunHeartbeatMessage = envelope('run.heartbeat', { runId: token, at: epochMs })
export type RunHeartbeatMessage = z.infer<typeof RunHeartbeatMessage>

/** Agent → reviewers, on `agents.<agent>.alive`: the requests this process still waits on. */
export const ApprovalAliveMessage = envelope('approval.alive', {
  agentId: name,
  requestIds: z.array(id).max(10_000),
  at: epochMs,
})
export type ApprovalAliveMessage = z.infer<typeof ApprovalAliveMessage>

/**
 * Agent → reviewers, on `approvals.<agent>.withdrawn` (durable): the agent no longer waits for a
 * decision on this request (a correction cancelled the call, the run was cancelled or ended), so
 * reviewers stop showing it at once. Quotes the request like a decision does.
 */
export const ApprovalWithdrawnMessage = envelope('approval.withdrawn', {
  requestId: id,
  agentId: name,
  callId: id,
  digest,
  reason: z.string().min(1).max(4096),
  /** Who withdrew it, when a person did: the sender of the correction or cancel, as the agent names them. */
  by: z.string().min(1).max(256).optional(),
  withdrawnAt: epochMs,
  ...signed,
})
export type ApprovalWithdrawnMessage = z.infer<typeof ApprovalWithdrawnMessage>

/**
 * Agent → answerers, on `ask.<agent>.withdrawn` (durable): the agent no longer waits for an answer
 * to this question (its run was cancelled or ended), so answerers stop showing it at once.
 */
export const QuestionWithdrawnMessage = envelope('question.withdrawn', {
  questionId: id,
  agentId: name,
  callId: id,
  reason: z.string().min(1).max(4096),
  /** Who withdrew it, when a person did: the sender of the cancel, as the agent names them. */
  by: z.string().min(1).max(256).optional(),
  withdrawnAt: epochMs,
  ...signed,
})
export type QuestionWithdrawnMessage = z.infer<typeof QuestionWithdrawnMessage>

/** A host announcing the agents it serves (directory entry). */
export const DirectoryEntryMessage = envelope('directory.entry', {
  agentId: name,
  hostId: z.string().min(1).max(256),
  description: z.string().max(4096).optional(),
  tools: z.array(z.string()).max(1_000),
  pid: z.number().int().optional(),
  hostname: z.string().max(256).optional(),
  startedAt: epochMs,
  refreshedAt: epochMs,
})
export type DirectoryEntryMessage = z.infer<typeof DirectoryEntryMessage>

export const PROTOCOL_MESSAGES = {
  'approval.request': ApprovalRequestMessage,
  'approval.decision': ApprovalDecisionMessage,
  'approval.alive': ApprovalAliveMessage,
  'approval.withdrawn': ApprovalWithdrawnMessage,
  question: QuestionMessage,
  answer: AnswerMessage,
  'question.withdrawn': QuestionWithdrawnMessage,
  steer: SteerMessage,
  'control.cancel': ControlRequestMessage,
  'control.status': ControlRequestMessage,
  'control.reply': ControlReplyMessage,
  'tool.call': ToolCallMessage,
  'tool.result': ToolResultMessage,
  'tool.describe': ToolDescribeMessage,
  'tool.description': ToolDescriptionMessage,
  'tool.list': ToolListMessage,
  'tool.catalog': ToolCatalogMessage,
  error: ErrorMessage,
  event: EventMessage,
  audit: AuditMessage,
  rejection: RejectionMessage,
  'run.request': RunRequestMessage,
  'run.accepted': RunAcceptedMessage,
  'run.result': RunResultMessage,
  'run.heartbeat': RunHeartbeatMessage,
  'directory.entry': DirectoryEntryMessage,
} as const
export type ProtocolMessageType = keyof typeof PROTOCOL_MESSAGES

import { z } from 'zod'

/**
 * signalbox wire protocol, version 1. Every message on the bus is one JSON object with
 * `v: 1` and a `type`; nothing parses bus payloads outside this module. `docs/protocol.md`
 * is the normative description of these schemas.
 */
export const PROTOCOL_VERSION = 1

const id = z.string().min(1).max(256)
const token = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[^.*>\s]+$/, 'must not contain ".", "*", ">" or whitespace')
const epochMs = z.number().int().nonnegative()
const runPath = z.array(id).max(64)

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
  agentId: token,
  runId: id,
  runPath,
  callId: id,
  toolName: token,
  arguments: z.unknown(),
  digest: z.string().regex(/^sha256:[0-9a-f]{64}$/),
  deadline: epochMs,
  requestedAt: epochMs,
})
export type ApprovalRequestMessage = z.infer<typeof ApprovalRequestMessage>

/** Reviewer → agent, on `approvals.<agent>.decisions`. Must quote requestId, callId and digest. */
export const ApprovalDecisionMessage = envelope('approval.decision', {
  requestId: id,
  callId: id,
  digest: z.string().regex(/^sha256:[0-9a-f]{64}$/),
  approved: z.boolean(),
  reason: z.string().max(4096).optional(),
  reviewer: z.string().min(1).max(256),
  decidedAt: epochMs,
})
export type ApprovalDecisionMessage = z.infer<typeof ApprovalDecisionMessage>

/** Agent → answerers, on `ask.<agent>`. */
export const QuestionMessage = envelope('question', {
  questionId: id,
  agentId: token,
  runId: id,
  runPath,
  callId: id,
  question: z.string().min(1).max(16_384),
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
})
export type AnswerMessage = z.infer<typeof AnswerMessage>

/** Anyone → agent, on `agents.<agent>.steer`: a correction for the next tool call. */
export const SteerMessage = envelope('steer', {
  /** Unique per correction: de-duplicates a retried publish. */
  steerId: id,
  text: z.string().min(1).max(16_384),
  from: z.string().min(1).max(256),
  /** Aim at one run; without it every active run of the agent gets it. */
  runId: id.optional(),
  sentAt: epochMs,
})
export type SteerMessage = z.infer<typeof SteerMessage>

/** Request on `agents.<agent>.control`. */
export const ControlRequestMessage = z.discriminatedUnion('type', [
  envelope('control.cancel', { runId: id.optional(), reason: z.string().max(1024).optional(), from: z.string().max(256).optional() }),
  envelope('control.status', {}),
])
export type ControlRequestMessage = z.infer<typeof ControlRequestMessage>

export const ControlReplyMessage = envelope('control.reply', {
  agentId: token,
  runs: z.array(z.object({ runId: id, state: z.string(), turn: z.number().int() })),
  cancelled: z.array(id).optional(),
})
export type ControlReplyMessage = z.infer<typeof ControlReplyMessage>

/** Agent → tool host, request on `tools.<tool>` (queue group `tools`). */
export const ToolCallMessage = envelope('tool.call', {
  callId: id,
  toolName: token,
  agentId: token,
  runId: id,
  arguments: z.unknown(),
  deadline: epochMs,
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
  name: token,
  description: z.string().max(8192),
  parameters: z.record(z.string(), z.unknown()),
  needsApproval: z.boolean().optional(),
  timeoutMs: z.number().int().positive().optional(),
})
export type ToolDescriptionMessage = z.infer<typeof ToolDescriptionMessage>

/** Any reply that is a failure: bad input, unknown tool, a tool that threw. */
export const ErrorMessage = envelope('error', {
  error: WireError,
  /** The id the request carried, when it could be read. */
  inReplyTo: id.optional(),
})
export type ErrorMessage = z.infer<typeof ErrorMessage>

/** Agent → observers, on `agents.<agent>.events.<type>`: observe-only. */
export const EventMessage = envelope('event', {
  event: z.looseObject({ type: z.string(), agentId: z.string(), runId: z.string(), at: epochMs }),
  /** Large fields were left out to fit the bus's maximum payload. */
  truncated: z.boolean().optional(),
})
export type EventMessage = z.infer<typeof EventMessage>

/** Written to `audit.<agent>` (durable): who decided what, when, and what they saw. */
export const AuditMessage = envelope('audit', {
  entry: z.object({
    kind: z.enum([
      'approval.granted',
      'approval.denied',
      'approval.timeout',
      'approval.rejected',
      'steering.applied',
      'question.answered',
      'question.timeout',
    ]),
    agentId: z.string(),
    runId: z.string(),
    runPath,
    callId: z.string().optional(),
    toolName: z.string().optional(),
    shown: z.unknown().optional(),
    digest: z.string().optional(),
    decision: z.string().optional(),
    reason: z.string().optional(),
    actor: z.string(),
    requestedAt: epochMs.optional(),
    decidedAt: epochMs,
    latencyMs: z.number().optional(),
  }),
})
export type AuditMessage = z.infer<typeof AuditMessage>

/** Published on `errors.<component>` when a message is rejected and there is nobody to reply to. */
export const RejectionMessage = envelope('rejection', {
  component: z.string(),
  subject: z.string(),
  error: WireError,
  /** The first bytes of the rejected payload, for debugging. */
  sample: z.string().max(512),
  at: epochMs,
})
export type RejectionMessage = z.infer<typeof RejectionMessage>

export const PROTOCOL_MESSAGES = {
  'approval.request': ApprovalRequestMessage,
  'approval.decision': ApprovalDecisionMessage,
  question: QuestionMessage,
  answer: AnswerMessage,
  steer: SteerMessage,
  'control.cancel': ControlRequestMessage,
  'control.status': ControlRequestMessage,
  'control.reply': ControlReplyMessage,
  'tool.call': ToolCallMessage,
  'tool.result': ToolResultMessage,
  'tool.describe': ToolDescribeMessage,
  'tool.description': ToolDescriptionMessage,
  error: ErrorMessage,
  event: EventMessage,
  audit: AuditMessage,
  rejection: RejectionMessage,
} as const
export type ProtocolMessageType = keyof typeof PROTOCOL_MESSAGES

/**
 * `@signalbox/core/protocol`: the wire protocol of docs/protocol.md — the message schemas, the
 * codec that checks every message crossing the bus, and the argument digest a decision quotes.
 */

export { callDigest, canonicalJson } from '../hitl/digest.ts'
export {
  type DecodeResult,
  decodeMessage,
  encodeMessage,
  errorMessage,
  ProtocolError,
  type ProtocolErrorCode,
} from './codec.ts'
export {
  AnswerMessage,
  ApprovalAliveMessage,
  ApprovalDecisionMessage,
  ApprovalRequestMessage,
  ApprovalWithdrawnMessage,
  AuditMessage,
  ControlReplyMessage,
  ControlRequestMessage,
  DirectoryEntryMessage,
  ErrorMessage,
  EventMessage,
  PROTOCOL_MESSAGES,
  PROTOCOL_VERSION,
  type ProtocolMessageType,
  QuestionMessage,
  QuestionWithdrawnMessage,
  RejectionMessage,
  RunAcceptedMessage,
  RunHeartbeatMessage,
  RunRequestMessage,
  RunResultMessage,
  SteerMessage,
  ToolCallMessage,
  ToolCatalogMessage,
  ToolDescribeMessage,
  ToolDescriptionMessage,
  ToolListMessage,
  ToolResultMessage,
  WireError,
} from './schemas.ts'

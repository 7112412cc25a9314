/**
 * Replies a person signs (approval decisions, answers to questions): the rules approvals and
 * questions share. Who signed is checked against the trust policy (and it is never the asking
 * agent's own key); the name shown and audited is the policy's name for that key, never the name
 * the message claims; and a reply is stored under a message id nobody can guess.
 */
import { randomBytes } from 'node:crypto'
import { type Clock, ErrorCode } from '@signalbox/core'
import { type Bus, BusError, type Subjects } from '@signalbox/core/bus'
import { type MessageBody, openMessage } from '@signalbox/core/internal'
import { encodeMessage } from '@signalbox/core/protocol'
import type { Signed } from '../trust/canonical.ts'
import type { TrustContext, TrustPolicy } from '../trust/policy.ts'
import type { Signer } from '../trust/sign.ts'
import type { EvidenceBook } from '../trust/signed-audit.ts'
import { msgIdPart } from './rejections.ts'
import type { ServiceMode } from './request-service.ts'

/** What the reviewer and the answer service are given besides who decides and whom they trust. */
export interface ReplyServiceOptions {
  bus: Bus
  subjects?: Subjects
  /** Which agents' requests to serve: one agent id, or all (default). */
  agentId?: string
  /**
   * `shared`: instances of `group` split the requests. `broadcast`: each sees every request (a room
   * of people; the first valid reply counts). Default: `shared` for reviewers, `broadcast` for answerers.
   */
  mode?: ServiceMode
  group?: string
  /** The key every reply is signed with (agents with a trust policy accept nothing else). */
  signer?: Signer
  clock?: Clock
  onError?(error: unknown): void
}

/** The reply's message id was taken before this service stored it: the agent may never see it. */
export class DecisionNotStoredError extends BusError {
  constructor(requestId: string) {
    super(
      ErrorCode.DECISION_NOT_STORED,
      `The decision on ${requestId} was not stored: its message id was already taken by another publisher.`,
    )
  }
}

/**
 * Why a signed reply may not be applied because of who signed it, or undefined: the policy's
 * verdict for `context`, and never the asking agent's own key (`signer`). Without a policy, nothing
 * is checked. `ownKey` finishes the refusal: "an agent never <decides its own calls>".
 */
export function signerProblem(
  reply: Signed,
  options: { trust: TrustPolicy | undefined; signer: Signer | undefined; context: TrustContext; ownKey: string },
): string | undefined {
  const { trust, signer } = options
  if (trust === undefined) return undefined
  const verdict = trust.check(reply, options.context)
  if (!verdict.ok) return `${verdict.code}: ${verdict.reason}`
  if (signer !== undefined && verdict.signer === signer.publicKey) {
    return `own-key: signed with the agent's own key: an agent never ${options.ownKey}`
  }
  return undefined
}

interface SignedMessage {
  v: number
  type: string
  signer?: string | undefined
  signature?: string | undefined
}

/**
 * A reply as it is applied or shown: its body, with `nameField` set to the policy's name for the
 * key that signed it (the claimed name stays when the policy does not know the key). With an
 * `evidence` book, the signed message is kept under `evidence.key` for the audit entry that records it.
 */
export function signedReply<M extends SignedMessage, K extends keyof MessageBody<M>>(
  message: M,
  options: { trust: TrustPolicy | undefined; nameField: K; evidence?: { book: EvidenceBook | undefined; key: string } },
): MessageBody<M> {
  const { body, signer } = openMessage(message)
  const { trust } = options
  if (trust === undefined || signer === undefined) return body
  options.evidence?.book?.remember(options.evidence.key, message as unknown as Signed)
  const name = trust.nameOf(signer)
  return name === undefined ? body : { ...body, [options.nameField]: name }
}

/**
 * Stores `reply` (signed with `signer` when there is one) on `subject` under an unguessable message
 * id: nobody can store a message under that id first and so silence the reply. A duplicate then
 * means it was not stored by this service: `DecisionNotStoredError`.
 */
export async function publishSignedReply<M extends Signed & { v: number; type: string }>(
  bus: Bus,
  reply: { subject: string; message: M; signer: Signer | undefined; idPrefix: string; requestId: string },
  signal: AbortSignal,
): Promise<void> {
  const message = reply.signer ? reply.signer.sign(reply.message) : reply.message
  const msgId = msgIdPart(`${reply.idPrefix}-${reply.requestId}-${randomBytes(12).toString('hex')}`)
  const stored = await bus.durablePublish(reply.subject, encodeMessage(message), { msgId, signal })
  if (stored.duplicate) throw new DecisionNotStoredError(reply.requestId)
}

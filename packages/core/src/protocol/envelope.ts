/** What every message carries around what it says (docs/protocol.md §1, §17). */
interface Envelope {
  v: number
  type: string
  signer?: string | undefined
  signature?: string | undefined
}

/** What a wire message says: without its envelope (`v`, `type`) and its signature (`signer`, `signature`). */
export type MessageBody<M> = Omit<M, keyof Envelope>

/**
 * Splits a decoded message into what it says and the key that claims to have signed it. The claim
 * is checked by a trust policy elsewhere; here it is only set apart, so what is handed on (to a
 * person, a program, a callback) never carries the envelope or the signature.
 */
export function openMessage<M extends Envelope>(message: M): { body: MessageBody<M>; signer: string | undefined } {
  const { v: _v, type: _type, signer, signature: _signature, ...body } = message
  return { body, signer }
}

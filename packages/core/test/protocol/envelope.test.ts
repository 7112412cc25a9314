import { describe, expect, it } from 'vitest'
import { openMessage } from '../../src/protocol/envelope.ts'

describe('openMessage', () => {
  it('sets the envelope and the signature apart from what the message says', () => {
    const message = { v: 1, type: 'answer', questionId: 'q1', answer: 'yes', signer: 'UABC', signature: 'sig' }
    expect(openMessage(message)).toEqual({ body: { questionId: 'q1', answer: 'yes' }, signer: 'UABC' })
  })

  it('an unsigned message has no signer', () => {
    expect(openMessage({ v: 1, type: 'directory.entry', agentId: 'a' })).toEqual({ body: { agentId: 'a' }, signer: undefined })
  })
})

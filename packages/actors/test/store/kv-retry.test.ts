/**
 * What the KV store retries: failures a cluster has for a moment (elections, a node lost, a
 * cluster still forming) are retried until the operation's bound; anything else fails at once.
 * The errors are the client's own classes, as the server's answers come back.
 */
import { JetStreamApiError } from '@nats-io/jetstream'
import { StoreUnavailableError } from '@signalbox/core/store'
import { describe, expect, it } from 'vitest'
import { isTransient, retryTransient } from '../../src/store/kv-retry.ts'

const apiError = (status: number, code: number, description: string) =>
  new JetStreamApiError({ code: status, err_code: code, description })

describe('KV store retries', () => {
  it('a replicated bucket made while the cluster is short of peers is retried, and made once they are there', async () => {
    const noPeers = apiError(400, 10005, 'no suitable peers for placement')
    expect(isTransient(noPeers)).toBe(true)
    let attempts = 0
    const made = await retryTransient(
      { signal: AbortSignal.timeout(10_000), what: 'Opening the bucket', retryMs: 5_000 },
      async () => {
        attempts++
        if (attempts < 3) throw noPeers
        return 'bucket'
      },
    )
    expect([made, attempts]).toEqual(['bucket', 3])
  })

  it('still short of peers when the bound passes: the store is unavailable, with the cause', async () => {
    const noPeers = apiError(400, 10005, 'no suitable peers for placement')
    const failed = retryTransient({ signal: AbortSignal.timeout(10_000), what: 'Opening the bucket', retryMs: 250 }, async () => {
      throw noPeers
    })
    await expect(failed).rejects.toBeInstanceOf(StoreUnavailableError)
    await expect(failed).rejects.toMatchObject({ cause: noPeers })
  })

  it('a bucket another host has just made, not yet known where this client asked, is retried until it is', async () => {
    const notYet = apiError(404, 10059, 'stream not found')
    expect(isTransient(notYet)).toBe(true)
    let attempts = 0
    const opened = await retryTransient(
      { signal: AbortSignal.timeout(10_000), what: 'Opening the bucket', retryMs: 5_000 },
      async () => {
        attempts++
        if (attempts < 2) throw notYet
        return 'bucket'
      },
    )
    expect([opened, attempts]).toEqual(['bucket', 2])
  })

  it('a refusal that another attempt cannot change fails at once', async () => {
    const refused = apiError(400, 10058, 'stream name already in use with a different configuration')
    expect(isTransient(refused)).toBe(false)
    let attempts = 0
    await expect(
      retryTransient({ signal: AbortSignal.timeout(10_000), what: 'Opening the bucket', retryMs: 5_000 }, async () => {
        attempts++
        throw refused
      }),
    ).rejects.toBe(refused)
    expect(attempts).toBe(1)
  })
})

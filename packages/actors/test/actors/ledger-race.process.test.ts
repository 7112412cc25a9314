/**
 * The pool's ledger of used approvals on a replicated (R3) bucket of a 3-node nats-server 2.9.10
 * cluster. There, a compare-and-set at a revision is not atomic (nats-io/nats-server#4319: nine
 * updates racing at one revision, measured: several stored in 87 of 200 rounds), but a create (the
 * expected last sequence 0) is (0 of 200): the ledger claims with creates only, and only the winner
 * updates its entry. Nine hosts, three per node, claim each decision at the same moment for nine
 * different calls, and exactly one of them may run it, every round.
 */
import { connect, type NatsConnection } from '@nats-io/transport-node'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type NatsCluster, startNatsCluster } from '../../../../test/support/nats-cluster.ts'
import { kvUsedApprovals } from '../../src/tools/kv-used-approvals.ts'

const ROUNDS = 60
const HOSTS = 9

let cluster: NatsCluster
const connections: NatsConnection[] = []

beforeAll(async () => {
  cluster = await startNatsCluster()
  for (let i = 0; i < HOSTS; i++) connections.push(await connect({ servers: cluster.urls[i % cluster.urls.length] }))
}, 60_000)

afterAll(async () => {
  for (const connection of connections) await connection.close()
  await cluster?.dispose()
})

describe('the ledger of used approvals on an R3 bucket', () => {
  it('one decision claimed at once by nine hosts for nine calls: exactly one runs it, every round', async () => {
    const ledgers = connections.map((connection) =>
      kvUsedApprovals<string>({ connection, bucket: 'race_ledger', replicas: 3, decode: (v) => String(v) }),
    )
    // The bucket exists (R3) before the race, as in a deployment.
    await ledgers[0]?.retentionMs(AbortSignal.timeout(20_000))
    const winners: number[] = []
    for (let round = 0; round < ROUNDS; round++) {
      const claims = await Promise.all(
        ledgers.map((ledger, host) =>
          ledger.claim(`request_${round}`, `run-${host}:call_drop`, {
            answerBy: Date.now() + 10_000,
            signal: AbortSignal.timeout(20_000),
          }),
        ),
      )
      winners.push(claims.filter((claim) => claim.kind === 'first').length)
      // Everyone else was told it is a replay (another call used it), never "first".
      expect(claims.filter((claim) => claim.kind === 'other')).toHaveLength(HOSTS - 1)
    }
    expect(winners).toEqual(Array.from({ length: ROUNDS }, () => 1))
  }, 120_000)
})

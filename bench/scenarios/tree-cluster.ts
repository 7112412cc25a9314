/**
 * Run trees at scale on a 3-node JetStream cluster (the cluster test's scenario,
 * `test/cluster/tree-scenario.ts`, with more parents): N parents here delegate to a child agent
 * served by three `signalbox host` processes sharing an R3 KV run store; each child waits for an
 * approval. Run twice on one cluster: without faults, then with one host SIGKILLed half-way and,
 * 3 s later, the node leading the run bucket's stream. Reported: how long everything took (and
 * the ratio of the two, same run, same machine), and how long after the host's death each of its
 * runs was taken over by another host (p50, max), with the checks the test makes.
 */

import { runTreeScenario, type TreeScenarioResult } from '../../test/cluster/tree-scenario.ts'
import { startNatsCluster } from '../../test/support/nats-cluster.ts'

export interface TreeClusterRow {
  fault: string
  parents: number
  finished: number
  totalMs: number
  /** Runs of the killed host, taken over / in flight at its death. */
  takenOver: string
  takeoverP50Ms: number | undefined
  takeoverMaxMs: number | undefined
  /** Runs two hosts were both told they had claimed (see `TreeScenarioResult.doubleClaims`). */
  doubleClaims: number
  /** Every task's side effect ran exactly once, and one approval was stored per child. */
  exactlyOnce: boolean
}

export async function treeClusterScenario(parents: number, log: (line: string) => void): Promise<TreeClusterRow[]> {
  const cluster = await startNatsCluster()
  try {
    const rows: TreeClusterRow[] = []
    for (const faults of [false, true]) {
      const result = await runTreeScenario({
        cluster,
        parents,
        faults,
        leaseMs: 10_000,
        deadlineMs: 10 * 60_000,
        log: (line) => log(`  ${faults ? 'faults' : 'no fault'}: ${line}`),
      })
      rows.push(toRow(faults ? 'host + stream leader killed' : 'none', result))
    }
    return rows
  } finally {
    await cluster.dispose()
  }
}

function toRow(fault: string, result: TreeScenarioResult): TreeClusterRow {
  const { takeoverMs } = result
  return {
    fault,
    parents: result.parents,
    finished: result.finished,
    totalMs: result.totalMs,
    takenOver: fault === 'none' ? '-' : `${result.claimed}/${result.orphaned}`,
    takeoverP50Ms: takeoverMs.length > 0 ? takeoverMs[Math.floor(takeoverMs.length / 2)] : undefined,
    takeoverMaxMs: takeoverMs.at(-1),
    doubleClaims: result.doubleClaims,
    exactlyOnce:
      result.effects.size === result.parents &&
      [...result.effects.values()].every((count) => count === 1) &&
      result.decisions === result.parents &&
      result.granted === result.parents,
  }
}

export function renderTreeCluster(rows: TreeClusterRow[]): string {
  const base = rows.find((row) => row.fault === 'none')
  const ms = (value: number | undefined) => (value === undefined ? '-' : value.toFixed(0))
  return [
    'fault                          parents  finished   total ms  vs none  taken over  takeover p50 ms  max ms  double claims  effects once',
    ...rows.map(
      (r) =>
        `${r.fault.padEnd(29)}  ${String(r.parents).padStart(7)}  ${String(r.finished).padStart(8)}  ${ms(r.totalMs).padStart(9)}  ${(base ? `${(r.totalMs / base.totalMs).toFixed(2)}x` : '-').padStart(7)}  ${r.takenOver.padStart(10)}  ${ms(r.takeoverP50Ms).padStart(15)}  ${ms(r.takeoverMaxMs).padStart(6)}  ${String(r.doubleClaims).padStart(13)}  ${r.exactlyOnce ? 'yes' : 'NO'}`,
    ),
  ].join('\n')
}

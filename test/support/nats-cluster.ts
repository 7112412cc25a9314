/**
 * A private 3-node nats-server cluster with JetStream for failover tests: free loopback ports
 * (client and route), one config per node (`server_name`, `cluster { name, listen, routes }`,
 * its own store dir), every node started and killed by pid (`nats-server.ts`). A node is
 * killed with SIGKILL and started again on the same ports and store.
 */
import { randomBytes } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { freePort, type NatsServer, startNatsServer } from './nats-server.ts'

export interface ClusterNode extends NatsServer {
  /** Its `server_name` (what JetStream reports as a leader). */
  readonly name: string
}

export interface NatsCluster {
  readonly nodes: readonly ClusterNode[]
  /** Every node's client URL: give them all to a client so it can fail over. */
  readonly urls: string[]
  node(name: string): ClusterNode
  /** Replaces every node's extra configuration (`config` of the options) and reloads each. */
  reconfigure(config: string): Promise<void>
  dispose(): Promise<void>
}

export interface NatsClusterOptions {
  /** Default 3. */
  size?: number
  /** How long each node may take to be ready (a quorum must form). Default 20 s. */
  startTimeoutMs?: number
  /** More configuration for every node (an `authorization` block). */
  config?: string
  /** The user the readiness probe logs in as, when `config` requires one. */
  probeLogin?: { user: string; pass: string }
  /**
   * Start only the first `running` nodes (default all): the others exist in every node's routes and
   * start with `restart()`, as a node that comes up late while the cluster forms.
   */
  running?: number
}

/**
 * Ports are picked free and then bound by the nodes: another process (a parallel test's server, a
 * connection's local port) can take one in between. A node that finds its port taken fails the
 * attempt; the nodes that did start are stopped, and the cluster starts again on other ports.
 */
export async function startNatsCluster(options: NatsClusterOptions = {}): Promise<NatsCluster> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startNatsClusterOnce(options)
    } catch (error) {
      if (attempt >= 3 || !/address already in use/.test(String((error as Error).message))) throw error
    }
  }
}

async function startNatsClusterOnce(options: NatsClusterOptions): Promise<NatsCluster> {
  const size = options.size ?? 3
  const clusterName = `sbx_${randomBytes(4).toString('hex')}`
  const routePorts = await Promise.all(Array.from({ length: size }, () => freePort()))
  const routes = routePorts.map((port) => `nats-route://127.0.0.1:${port}`)
  const storeDirs: string[] = []
  const started = await Promise.allSettled(
    routePorts.map(async (routePort, index) => {
      const name = `n${index + 1}`
      // The store dir is in the config too: a reload refuses a config whose store dir differs from the running one.
      const storeDir = await mkdtemp(path.join(os.tmpdir(), `signalbox-nats-${name}-`))
      storeDirs.push(storeDir)
      const head = [
        `server_name: ${name}`,
        `jetstream { store_dir: ${JSON.stringify(storeDir)}, max_memory_store: 256MB, max_file_store: 1GB }`,
        'cluster {',
        `  name: ${clusterName}`,
        `  listen: 127.0.0.1:${routePort}`,
        `  routes: [${routes.join(', ')}]`,
        '}',
      ].join('\n')
      const config = options.config ? `${head}\n${options.config}` : head
      // Started together: JetStream answers only once a quorum of nodes has elected a meta leader.
      const server = await startNatsServer({
        ...(index >= (options.running ?? size) ? { stopped: true } : {}),
        config,
        storeDir,
        storeDirInConfig: true,
        startTimeoutMs: options.startTimeoutMs ?? 20_000,
        ...(options.probeLogin ? { probeLogin: options.probeLogin } : {}),
      })
      return Object.assign(server, { name, head }) as ClusterNode & { head: string }
    }),
  )
  const failed = started.find((result) => result.status === 'rejected')
  if (failed !== undefined) {
    await Promise.allSettled(started.map((result) => (result.status === 'fulfilled' ? result.value.dispose() : undefined)))
    await Promise.allSettled(storeDirs.map((dir) => rm(dir, { recursive: true, force: true })))
    throw failed.reason
  }
  const nodes = started.map((result) => (result as PromiseFulfilledResult<ClusterNode & { head: string }>).value)
  return {
    nodes,
    urls: nodes.map((node) => node.url),
    node(name) {
      const found = nodes.find((node) => node.name === name)
      if (found === undefined) throw new Error(`no cluster node "${name}"`)
      return found
    },
    async reconfigure(config) {
      await Promise.all(nodes.map((node) => node.reconfigure(`${node.head}\n${config}`)))
    },
    async dispose() {
      await Promise.allSettled(nodes.map((node) => node.dispose()))
      await Promise.allSettled(storeDirs.map((dir) => rm(dir, { recursive: true, force: true })))
    },
  }
}

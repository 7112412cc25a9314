import type { Signer, TrustPolicy } from '@signalbox/actors/trust'
import { type ApprovalRequest, type Clock, ConfigError, ErrorCode, SignalboxError, systemClock } from '@signalbox/core'
import type { Bus, Subjects } from '@signalbox/core/bus'
import { type ConsoleHub, createConsoleHub } from './console-hub.ts'
import { startConsoleServer } from './console-server.ts'
import { pageAssets } from './page-assets.ts'

export interface ConsoleOptions {
  /** The bus the agents are on: NATS (`connectNatsBus`) or one process's `InProcessBus`. */
  bus: Bus
  subjects?: Subjects
  /** Who decides in this console (required): recorded in every decision, answer and correction. */
  reviewer: string
  /** Default 0: a free port. */
  port?: number
  /** Default `127.0.0.1`: the console is for this machine only. */
  host?: string
  /** Only this agent's requests and runs. Default: every agent on the bus. */
  agentId?: string
  /** Show message contents, tool arguments and outputs in the run view. Default false. */
  includeContents?: boolean
  /** The agents' public keys: only requests signed by one are shown, marked verified. Default: none (unchecked). */
  agentKeys?: readonly string[]
  /**
   * A trust policy (the agents' own file works): its `agents` check requests as `agentKeys` do, and
   * only decisions and answers signed by its `reviewers` and `answerers` settle an item elsewhere
   * (a forged one cannot drop it from the inbox; without those sections nothing made elsewhere
   * does). Without `agents` or `agentKeys`, requests are not checked.
   */
  trust?: TrustPolicy
  /** The console's nkey: its decisions, answers, steering and cancels are signed (agents with a trust policy accept nothing else). */
  signer?: Signer
  clock?: Clock
  /** An approval request refused without being shown (not signed by an agent key, digest mismatch). */
  onRefused?(requestId: string, reason: string, request: ApprovalRequest): void
  onError?(error: unknown): void
}

export interface Console {
  /** `http://localhost:<port>` */
  readonly url: string
  readonly port: number
  readonly hub: ConsoleHub
  /** Resolves when the console listens to every subject it needs. */
  readonly ready: Promise<void>
  close(): Promise<void>
}

/**
 * Serves the console for the agents on `bus`:
 *
 *   const console = await startConsole({ bus, reviewer: 'tina' })
 *   // open console.url
 */
export async function startConsole(options: ConsoleOptions): Promise<Console> {
  const reviewer = options.reviewer?.trim()
  if (!reviewer) throw new ConfigError('startConsole needs a reviewer name: who decides goes into every decision')
  const clock = options.clock ?? systemClock
  // Read while the hub sets up its subscriptions.
  const assets = pageAssets()
  assets.catch(() => {})
  const hub = createConsoleHub({
    bus: options.bus,
    reviewer,
    clock,
    ...(options.subjects ? { subjects: options.subjects } : {}),
    ...(options.agentId ? { agentId: options.agentId } : {}),
    ...(options.includeContents ? { includeContents: true } : {}),
    ...(options.agentKeys?.length ? { agentKeys: options.agentKeys } : {}),
    ...(options.trust ? { trust: options.trust } : {}),
    ...(options.signer ? { signer: options.signer } : {}),
    ...(options.onRefused ? { onRefused: options.onRefused } : {}),
    ...(options.onError ? { onError: options.onError } : {}),
  })
  try {
    const { script, chart, warning } = await assets
    if (warning) options.onError?.(new SignalboxError(ErrorCode.CONFIG_INVALID, warning, { fault: 'user' }))
    const server = await startConsoleServer({
      hub,
      chart,
      script,
      port: options.port ?? 0,
      host: options.host ?? '127.0.0.1',
      now: () => clock.now(),
    })
    return {
      url: server.url,
      port: server.port,
      hub,
      ready: hub.ready,
      async close() {
        hub.close()
        await server.close()
      },
    }
  } catch (error) {
    hub.close()
    throw error
  }
}

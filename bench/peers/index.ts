/**
 * The agent frameworks signalbox is measured against, each on the same tool, prompt and scripted
 * model server as signalbox's HTTP variants. Bench only: no signalbox package depends on them.
 */
import { aiSdkRun } from './ai-sdk.ts'
import { langGraphRun } from './langgraph.ts'
import { openaiAgentsRun } from './openai-agents.ts'
import type { PeerOptions, PeerRun } from './options.ts'

export type { PeerOptions, PeerRun } from './options.ts'

export const PEER_LABELS = {
  aiSdk: 'Vercel AI SDK (generateText)',
  openaiAgents: 'OpenAI Agents SDK (Agent + run)',
  langGraph: 'LangGraph.js (createReactAgent)',
} as const

export type PeerId = keyof typeof PEER_LABELS

export const PEER_IDS = Object.keys(PEER_LABELS) as PeerId[]

export function peerRuns(options: PeerOptions): Record<PeerId, PeerRun> {
  return { aiSdk: aiSdkRun(options), openaiAgents: openaiAgentsRun(options), langGraph: langGraphRun(options) }
}

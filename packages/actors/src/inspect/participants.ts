/**
 * Reviewers and tool hosts are not XState machines, so they announce themselves through the
 * inspector's manual API: an actor each (`<runtimeId>:reviewer`, `<runtimeId>:tool:<name>`), a
 * snapshot when they start or stop working, and one event per message, so the inspector's sequence
 * view shows agent → reviewer → agent and agent → tool → agent. Only ids and outcomes are sent.
 */
import type { ApprovalDecision, Reviewer, Tool } from '@signalbox/core'
import type { WireError } from '@signalbox/core/protocol'
import { runSessionId } from './convert.ts'
import type { ManualInspector } from './inspector.ts'

export interface InspectReviewerOptions {
  /** Local participant id. Default `reviewer`. */
  id?: string
  /** Shown in the inspector. Default the id. */
  name?: string
}

/**
 * Wraps a reviewer so each review shows up as `run:<runId>` → reviewer (`approval.request`) and
 * reviewer → `run:<runId>` (`approval.decision`). Works in the agent's process or in a reviewer
 * service: `serveReviewer({ reviewer: inspectReviewer(policy, inspector), ... })`. The result
 * only has `open` and `review`: keep the original to `close()` it.
 */
export function inspectReviewer(reviewer: Reviewer, inspector: ManualInspector, options: InspectReviewerOptions = {}): Reviewer {
  const id = options.id ?? 'reviewer'
  const name = options.name ?? id
  let pending = 0
  let decided = 0
  const state = () => ({ status: 'active' as const, value: pending > 0 ? 'deciding' : 'idle', context: { pending, decided } })
  inspector.actor(id, name, state())
  return {
    // A remote reviewer's `open` (store first, then announce) must survive the wrapping.
    ...(reviewer.open
      ? { open: (request, openOptions) => (reviewer.open as NonNullable<Reviewer['open']>)(request, openOptions) }
      : {}),
    ...(reviewer.recover ? { recover: reviewer.recover.bind(reviewer) } : {}),
    ...(reviewer.withdraw ? { withdraw: reviewer.withdraw.bind(reviewer) } : {}),
    async review(request, reviewOptions) {
      const run = runSessionId(request.runId)
      const ids = { requestId: request.requestId, callId: request.callId, toolName: request.toolName }
      pending++
      inspector.event(run, id, { type: 'approval.request', ...ids })
      inspector.snapshot(id, state(), { type: 'approval.request', ...ids })
      let decision: ApprovalDecision | undefined
      try {
        decision = await reviewer.review(request, reviewOptions)
        return decision
      } finally {
        pending--
        if (decision) {
          decided++
          const answer = { type: 'approval.decision', ...ids, approved: decision.approved }
          inspector.event(id, run, answer)
          inspector.snapshot(id, state(), answer)
        } else {
          inspector.snapshot(id, state(), { type: 'approval.abandoned', ...ids })
        }
      }
    },
  }
}

/** What `serveTools` reports (its `onCall` / `onResult` options). */
export interface ToolHostCallbacks {
  onCall(call: { toolName: string; callId: string; agentId: string; runId: string }): void
  onResult(call: { toolName: string; callId: string }, outcome: { ok: boolean; durationMs: number; error?: WireError }): void
}

/**
 * `onCall` / `onResult` for `serveTools` that show each call as `run:<runId>` → `tool:<name>`
 * (`tool.call`) and `tool:<name>` → `run:<runId>` (`tool.result`, with `ok`, `durationMs` and the
 * error code). Pass your own callbacks to chain them; `tools` announces those tools at once.
 */
export function inspectToolHost(
  inspector: ManualInspector,
  options: Partial<ToolHostCallbacks> & { tools?: string[] } = {},
): ToolHostCallbacks {
  const tracker = toolTracker(inspector)
  for (const name of options.tools ?? []) tracker.announce(name)
  const runs = new Map<string, string>()
  return {
    onCall(call) {
      runs.set(call.callId, call.runId)
      tracker.call(call.toolName, call.runId, call.callId)
      options.onCall?.(call)
    },
    onResult(call, outcome) {
      const runId = runs.get(call.callId)
      runs.delete(call.callId)
      tracker.result(call.toolName, runId, call.callId, outcome.ok, outcome.durationMs, outcome.error?.code)
      options.onResult?.(call, outcome)
    },
  }
}

/**
 * A local tool (running in the agent's process) that appears in the inspector as `tool:<name>`,
 * like a tool on a tool host. The agent machine's own `executeTool` actor shows the call too; this
 * adds the tool as a participant of its own.
 */
export function inspectTool<A>(tool: Tool<A>, inspector: ManualInspector): Tool<A> {
  const tracker = toolTracker(inspector)
  tracker.announce(tool.name)
  return {
    ...tool,
    validate: (args) => tool.validate(args),
    async execute(args, context) {
      const started = Date.now()
      tracker.call(tool.name, context.runId, context.callId)
      try {
        const output = await tool.execute(args, context)
        tracker.result(tool.name, context.runId, context.callId, true, Date.now() - started, undefined)
        return output
      } catch (error) {
        const code = typeof (error as { code?: unknown })?.code === 'string' ? (error as { code: string }).code : 'TOOL_FAILED'
        tracker.result(tool.name, context.runId, context.callId, false, Date.now() - started, code)
        throw error
      }
    },
  }
}

function toolTracker(inspector: ManualInspector) {
  const running = new Map<string, number>()
  const calls = new Map<string, number>()
  const announced = new Set<string>()
  const idOf = (name: string) => `tool:${name}`
  const state = (name: string) => {
    const n = running.get(name) ?? 0
    return { status: 'active' as const, value: n > 0 ? 'running' : 'idle', context: { running: n, calls: calls.get(name) ?? 0 } }
  }
  const announce = (name: string) => {
    if (announced.has(name)) return
    announced.add(name)
    inspector.actor(idOf(name), idOf(name), state(name))
  }
  return {
    announce,
    call(name: string, runId: string, callId: string) {
      announce(name)
      running.set(name, (running.get(name) ?? 0) + 1)
      calls.set(name, (calls.get(name) ?? 0) + 1)
      const event = { type: 'tool.call', callId, toolName: name }
      inspector.event(runSessionId(runId), idOf(name), event)
      inspector.snapshot(idOf(name), state(name), event)
    },
    result(name: string, runId: string | undefined, callId: string, ok: boolean, durationMs: number, code: string | undefined) {
      announce(name)
      running.set(name, Math.max(0, (running.get(name) ?? 0) - 1))
      const event = { type: 'tool.result', callId, toolName: name, ok, durationMs, ...(code ? { code } : {}) }
      if (runId !== undefined) inspector.event(idOf(name), runSessionId(runId), event)
      inspector.snapshot(idOf(name), state(name), event)
    },
  }
}

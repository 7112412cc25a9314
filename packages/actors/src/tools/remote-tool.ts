import { type Tool, ToolError } from '@signalbox/core'
import {
  type Bus,
  BusNoRespondersError,
  BusPayloadTooLargeError,
  BusTimeoutError,
  createSubjects,
  type Subjects,
} from '@signalbox/core/bus'
import { formatDuration, idempotencyKey } from '@signalbox/core/internal'
import {
  decodeMessage,
  ErrorMessage,
  encodeMessage,
  PROTOCOL_VERSION,
  type ToolCallMessage,
  ToolCatalogMessage,
  type ToolDescribeMessage,
  ToolDescriptionMessage,
  type ToolListMessage,
  ToolResultMessage,
} from '@signalbox/core/protocol'
import { z } from 'zod/v4'
import { IDEMPOTENCY_KEY_HEADER } from './tool-host.ts'

export interface RemoteToolOptions {
  bus: Bus
  name: string
  description: string
  /** JSON Schema of the arguments (the host validates them fully). */
  parameters: Record<string, unknown>
  needsApproval?: boolean
  /** How long to wait for the host. Default 60 s. */
  timeoutMs?: number
  subjects?: Subjects
}

const ToolReply = z.discriminatedUnion('type', [ToolResultMessage, ErrorMessage])

/**
 * A tool that runs on a tool host elsewhere on the bus. For the agent it is just a tool: no
 * host, a timeout or a host that crashes mid-call become error results the model reads.
 */
export function remoteTool(options: RemoteToolOptions): Tool<unknown> {
  const { bus, name } = options
  const subjects = options.subjects ?? createSubjects()
  const subject = subjects.tool(name)
  const timeoutMs = options.timeoutMs ?? 60_000
  return {
    name,
    description: options.description,
    parameters: options.parameters,
    ...(options.needsApproval ? { needsApproval: true } : {}),
    validate: (args) =>
      args !== null && typeof args === 'object' && !Array.isArray(args)
        ? { ok: true, value: args }
        : { ok: false, issues: ['(root): the arguments must be a JSON object'] },
    async execute(args, context) {
      const approval = context.approval?.decision.evidence
      const call: ToolCallMessage = {
        v: PROTOCOL_VERSION,
        type: 'tool.call',
        callId: context.callId,
        toolName: name,
        agentId: context.agentId,
        runId: context.runId,
        arguments: args,
        // A little before our own timeout: a live host whose tool hangs answers TOOL_TIMEOUT itself
        // (more telling than our "did not answer", which then means the host itself is gone).
        deadline: context.clock.now() + timeoutMs - Math.min(1_000, Math.floor(timeoutMs / 10)),
        // The reviewer's signed decision, exactly as received: a host that verifies approvals checks
        // the reviewer's signature, not this agent's word (protocol §8.6). None when unsigned.
        ...(approval ? { approval } : {}),
      }
      let response: Awaited<ReturnType<Bus['request']>>
      try {
        response = await bus.request(subject, encodeMessage(call), {
          timeoutMs,
          signal: context.signal,
          // The host answers a retried call (a resumed run, a reconnect) with its first answer.
          headers: { [IDEMPOTENCY_KEY_HEADER]: idempotencyKey(context.runId, context.callId) },
        })
      } catch (error) {
        if (BusNoRespondersError.is(error)) {
          throw new ToolError(
            'TOOL_UNAVAILABLE',
            `No tool host is serving "${name}" right now. Try another way, or tell the person.`,
            {
              cause: error,
            },
          )
        }
        if (BusTimeoutError.is(error)) {
          throw new ToolError(
            'TOOL_TIMEOUT',
            `"${name}" did not answer within ${formatDuration(timeoutMs)} (its host may have stopped).`,
            {
              cause: error,
            },
          )
        }
        if (BusPayloadTooLargeError.is(error)) {
          throw new ToolError(
            'TOOL_ARGUMENTS_TOO_LARGE',
            `The arguments for "${name}" are ${error.size} bytes; the bus carries at most ${error.max}. Send less.`,
            { cause: error },
          )
        }
        throw error
      }
      const decoded = decodeMessage(response.data, ToolReply, { maxBytes: bus.maxPayload })
      if (!decoded.ok)
        throw new ToolError('TOOL_BAD_REPLY', `The host of "${name}" sent an invalid reply: ${decoded.error.message}`)
      const reply = decoded.value
      if (reply.type === 'error') {
        if (reply.inReplyTo !== undefined && reply.inReplyTo !== call.callId) {
          throw new ToolError('TOOL_BAD_REPLY', `The host of "${name}" answered call ${reply.inReplyTo}, not ${call.callId}.`)
        }
        // The host's details go on (the issues of refused arguments: the model reads them as for a local tool).
        throw new ToolError(reply.error.code, reply.error.message, reply.error.details ? { details: reply.error.details } : {})
      }
      if (reply.callId !== call.callId) {
        throw new ToolError('TOOL_BAD_REPLY', `The host of "${name}" answered call ${reply.callId}, not ${call.callId}.`)
      }
      return reply.output
    },
  }
}

export interface DiscoverToolsOptions {
  bus: Bus
  /** The tools to find; without names, every tool the hosts on the bus serve. */
  names?: string[]
  subjects?: Subjects
  /**
   * With names: how long each description may take. Without: the longest the hosts' lists are
   * gathered (it ends sooner, a moment after the last host answered). Default 5 s.
   */
  timeoutMs?: number
  signal?: AbortSignal
}

/**
 * Asks the hosts on the bus to describe the named tools, or (without `names`) to list what they
 * serve, and returns them as remote tools (one per name, whichever hosts serve it).
 */
export async function discoverTools(options: DiscoverToolsOptions): Promise<Tool<unknown>[]> {
  const subjects = options.subjects ?? createSubjects()
  const timeoutMs = options.timeoutMs ?? 5_000
  const signal = options.signal ? { signal: options.signal } : {}
  const asRemote = (d: Omit<ToolDescriptionMessage, 'v' | 'type'>) =>
    remoteTool({
      bus: options.bus,
      subjects,
      name: d.name,
      description: d.description,
      parameters: d.parameters,
      ...(d.needsApproval ? { needsApproval: true } : {}),
      ...(d.timeoutMs ? { timeoutMs: d.timeoutMs } : {}),
    })
  if (options.names === undefined) {
    const list: ToolListMessage = { v: PROTOCOL_VERSION, type: 'tool.list' }
    const replies = await options.bus.requestMany(subjects.toolCatalog(), encodeMessage(list), { timeoutMs, ...signal })
    const byName = new Map<string, Omit<ToolDescriptionMessage, 'v' | 'type'>>()
    for (const reply of replies) {
      // A host that answers with an error (or junk) lists nothing; the others still count.
      const decoded = decodeMessage(reply.data, ToolCatalogMessage, { maxBytes: options.bus.maxPayload })
      if (!decoded.ok) continue
      for (const tool of decoded.value.tools) if (!byName.has(tool.name)) byName.set(tool.name, tool)
    }
    return [...byName.values()].sort((a, b) => a.name.localeCompare(b.name)).map(asRemote)
  }
  const request: ToolDescribeMessage = { v: PROTOCOL_VERSION, type: 'tool.describe' }
  return Promise.all(
    options.names.map(async (name) => {
      const response = await options.bus.request(subjects.toolDescribe(name), encodeMessage(request), { timeoutMs, ...signal })
      const decoded = decodeMessage(response.data, ToolDescriptionMessage, { maxBytes: options.bus.maxPayload })
      if (!decoded.ok) throw decoded.error
      return asRemote(decoded.value)
    }),
  )
}

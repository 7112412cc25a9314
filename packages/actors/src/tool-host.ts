import {
  AbortedError,
  type Bus,
  type Clock,
  createSubjects,
  decodeMessage,
  describeError,
  encodeMessage,
  errorMessage,
  PROTOCOL_VERSION,
  type SignalboxError,
  stringifyToolOutput,
  type Subjects,
  type Subscription,
  systemClock,
  type Tool,
  ToolCallMessage,
  ToolDescribeMessage,
  type ToolDescriptionMessage,
  type ToolResultMessage,
  type WireError,
} from '@signalbox/core'

export const TOOL_QUEUE_GROUP = 'signalbox-tools'

export interface ToolHostOptions {
  bus: Bus
  tools: Tool<any>[]
  subjects?: Subjects
  /** Hosts in the same queue group share the calls. Default `signalbox-tools`. */
  queue?: string
  clock?: Clock
  onCall?(call: { toolName: string; callId: string; agentId: string; runId: string }): void
  onResult?(call: { toolName: string; callId: string }, outcome: { ok: boolean; durationMs: number; error?: WireError }): void
}

export interface ToolHost {
  readonly ready: Promise<void>
  /** Calls running now. */
  readonly running: number
  /** Stops taking calls; running calls are aborted. */
  close(): void
}

/**
 * Serves tools on `tools.<name>` (request/reply, queue group) and their descriptions on
 * `tools.<name>.describe`. Every failure is a typed `error` reply; no input can crash the host.
 */
export function serveTools(options: ToolHostOptions): ToolHost {
  const { bus } = options
  const subjects = options.subjects ?? createSubjects()
  const clock = options.clock ?? systemClock
  const queue = options.queue ?? TOOL_QUEUE_GROUP
  const stop = new AbortController()
  const subscriptions: Subscription[] = []
  let running = 0

  const reply = (respond: (data: Uint8Array) => boolean, message: ToolResultMessage | ReturnType<typeof errorMessage>) => {
    let data = encodeMessage(message)
    if (data.byteLength > bus.maxPayload) {
      data = encodeMessage(
        errorMessage({
          code: 'TOOL_RESULT_TOO_LARGE',
          message: `The result is ${data.byteLength} bytes; the bus carries at most ${bus.maxPayload}. Return less.`,
        }, message.type === 'tool.result' ? message.callId : undefined),
      )
    }
    try {
      respond(data)
    } catch {
      // The caller is gone (closed bus); nothing else to do.
    }
  }

  for (const tool of options.tools) {
    const description: ToolDescriptionMessage = {
      v: PROTOCOL_VERSION,
      type: 'tool.description',
      name: tool.name,
      description: tool.description,
      parameters: tool.parameters,
      ...(tool.needsApproval === undefined ? {} : { needsApproval: tool.needsApproval !== false }),
      ...(tool.timeoutMs === undefined ? {} : { timeoutMs: tool.timeoutMs }),
    }
    subscriptions.push(
      bus.subscribe(
        subjects.toolDescribe(tool.name),
        (message) => {
          const decoded = decodeMessage(message.data, ToolDescribeMessage, { maxBytes: bus.maxPayload })
          message.respond(encodeMessage(decoded.ok ? description : errorMessage(decoded.error.toJSON())))
        },
        { queue },
      ),
    )
    subscriptions.push(
      bus.subscribe(
        subjects.tool(tool.name),
        async (message) => {
          const respond = (data: Uint8Array) => message.respond(data)
          const decoded = decodeMessage(message.data, ToolCallMessage, { maxBytes: bus.maxPayload })
          if (!decoded.ok) return reply(respond, errorMessage((decoded.error as SignalboxError).toJSON()))
          const call = decoded.value
          if (call.toolName !== tool.name) {
            return reply(
              respond,
              errorMessage({ code: 'TOOL_UNKNOWN', message: `This subject serves "${tool.name}", not "${call.toolName}".` }, call.callId),
            )
          }
          const validation = tool.validate(call.arguments)
          if (!validation.ok) {
            return reply(
              respond,
              errorMessage(
                {
                  code: 'TOOL_INVALID_ARGUMENTS',
                  message: `Invalid arguments for "${tool.name}":\n${validation.issues.map((i) => `- ${i}`).join('\n')}`,
                  details: { issues: validation.issues },
                },
                call.callId,
              ),
            )
          }
          const started = clock.now()
          options.onCall?.({ toolName: tool.name, callId: call.callId, agentId: call.agentId, runId: call.runId })
          const controller = new AbortController()
          const onStop = () => controller.abort(new AbortedError('the tool host is stopping'))
          stop.signal.addEventListener('abort', onStop, { once: true })
          let timedOut = false
          const timer = clock.setTimeout(() => {
            timedOut = true
            controller.abort(new AbortedError('the call passed its deadline'))
          }, Math.max(0, call.deadline - clock.now()))
          running++
          try {
            const output = await tool.execute(validation.value, {
              signal: controller.signal,
              callId: call.callId,
              agentId: call.agentId,
              runId: call.runId,
              runPath: [],
              clock,
              audit: { record: () => {} },
              emit: () => {},
            })
            if (timedOut) throw new AbortedError('the call passed its deadline')
            reply(respond, { v: PROTOCOL_VERSION, type: 'tool.result', callId: call.callId, output: stringifyToolOutput(output) })
            options.onResult?.({ toolName: tool.name, callId: call.callId }, { ok: true, durationMs: clock.now() - started })
          } catch (error) {
            const wire: WireError = timedOut
              ? { code: 'TOOL_TIMEOUT', message: `"${tool.name}" passed its deadline on the host.` }
              : { code: 'TOOL_FAILED', message: describeError(error) }
            reply(respond, errorMessage(wire, call.callId))
            options.onResult?.({ toolName: tool.name, callId: call.callId }, { ok: false, durationMs: clock.now() - started, error: wire })
          } finally {
            running--
            clock.clearTimeout(timer)
            stop.signal.removeEventListener('abort', onStop)
          }
        },
        { queue },
      ),
    )
  }

  return {
    ready: Promise.all(subscriptions.map((s) => s.ready)).then(() => {}),
    get running() {
      return running
    },
    close() {
      for (const subscription of subscriptions) subscription.unsubscribe()
      stop.abort()
    },
  }
}

/**
 * Attribute names, in one place: the OpenTelemetry GenAI semantic conventions where one exists,
 * `signalbox.*` for what is the runtime's own.
 */
export const GenAI = {
  operationName: 'gen_ai.operation.name',
  /** Who serves the model (`openai`, `anthropic`...): Required on `chat` and `invoke_agent`. */
  providerName: 'gen_ai.provider.name',
  agentId: 'gen_ai.agent.id',
  agentName: 'gen_ai.agent.name',
  conversationId: 'gen_ai.conversation.id',
  requestModel: 'gen_ai.request.model',
  responseFinishReasons: 'gen_ai.response.finish_reasons',
  responseModel: 'gen_ai.response.model',
  responseId: 'gen_ai.response.id',
  /** On the token usage metric: `input` or `output`. */
  tokenType: 'gen_ai.token.type',
  promptName: 'gen_ai.prompt.name',
  inputTokens: 'gen_ai.usage.input_tokens',
  outputTokens: 'gen_ai.usage.output_tokens',
  inputMessages: 'gen_ai.input.messages',
  outputMessages: 'gen_ai.output.messages',
  toolName: 'gen_ai.tool.name',
  toolType: 'gen_ai.tool.type',
  toolCallId: 'gen_ai.tool.call.id',
  toolCallArguments: 'gen_ai.tool.call.arguments',
  toolCallResult: 'gen_ai.tool.call.result',
} as const

/** Where the model (or the MCP server) is reached. */
export const Server = {
  address: 'server.address',
  port: 'server.port',
} as const

/** The OpenTelemetry MCP semantic conventions (client side). */
export const Mcp = {
  methodName: 'mcp.method.name',
  sessionId: 'mcp.session.id',
  protocolVersion: 'mcp.protocol.version',
  resourceUri: 'mcp.resource.uri',
  requestId: 'jsonrpc.request.id',
  /** The JSON-RPC error code of a failed request. */
  responseStatusCode: 'rpc.response.status_code',
  networkTransport: 'network.transport',
  networkProtocolName: 'network.protocol.name',
} as const

/** The GenAI client metrics. */
export const Metric = {
  tokenUsage: 'gen_ai.client.token.usage',
  operationDuration: 'gen_ai.client.operation.duration',
} as const

/** Values of `gen_ai.operation.name`. */
export const Operation = {
  invokeAgent: 'invoke_agent',
  chat: 'chat',
  executeTool: 'execute_tool',
} as const

export const Signalbox = {
  agentId: 'signalbox.agent.id',
  agentPath: 'signalbox.agent.path',
  runId: 'signalbox.run.id',
  runPath: 'signalbox.run.path',
  parentRunId: 'signalbox.run.parent_id',
  runStatus: 'signalbox.run.status',
  /** A stored run this process continued (after a restart, or taken over from another host). */
  runResumed: 'signalbox.run.resumed',
  runTurns: 'signalbox.run.turns',
  runInput: 'signalbox.run.input',
  runOutput: 'signalbox.run.output',
  turn: 'signalbox.turn',
  turnToolCalls: 'signalbox.turn.tool_calls',
  modelAttempt: 'signalbox.model.attempt',
  modelRetryDelayMs: 'signalbox.model.retry_delay_ms',
  toolOutcome: 'signalbox.tool.outcome',
  toolHost: 'signalbox.tool.host',
  hookPoint: 'signalbox.hook.point',
  hookName: 'signalbox.hook.name',
  hookIndex: 'signalbox.hook.index',
  /** beforeToolExecution: allow, deny, respond; beforeTurn: continue, stop. */
  hookDecision: 'signalbox.hook.decision',
  /** Whether a rewriting hook (beforeProviderCall, afterToolExecution) changed what it was given. */
  hookRewrote: 'signalbox.hook.rewrote',
  approvalRequestId: 'signalbox.approval.request_id',
  /** approved, denied, timeout, unavailable. */
  approvalDecision: 'signalbox.approval.decision',
  approvalReviewer: 'signalbox.approval.reviewer',
  approvalReason: 'signalbox.approval.reason',
  questionId: 'signalbox.question.id',
  questionText: 'signalbox.question.text',
  /** answered, timeout, rejected (the answer was refused and the question asked again). */
  questionOutcome: 'signalbox.question.outcome',
  answer: 'signalbox.question.answer',
  answeredBy: 'signalbox.question.answered_by',
  steeringFrom: 'signalbox.steering.from',
  steeringText: 'signalbox.steering.text',
  latencyMs: 'signalbox.latency_ms',
  errorCode: 'signalbox.error.code',
} as const

/** The OpenTelemetry general attribute for the class of error (here: signalbox's error `code`). */
export const ERROR_TYPE = 'error.type'

/** The tracer's name (instrumentation scope). */
export const TRACER_NAME = '@signalbox/otel'
export const TRACER_VERSION = '0.1.0'

/**
 * Where a run stands, in words a reviewer reads at a glance ("waiting for your approval") rather
 * than the machine's path (`running.turn.toolCalls.awaitingApproval`). A state without words here
 * (a newer machine) is named by the first sentence of its description, then by its key.
 */

const WORDS: Record<string, string> = {
  idle: 'not started yet',
  beforeTurn: 'starting a turn',
  runningBeforeTurn: 'running the beforeTurn hooks',
  beforeProviderCall: 'preparing the call to the model',
  runningBeforeProviderCall: 'running the beforeProviderCall hooks',
  callingModel: 'waiting for the model',
  waitingToRetry: 'waiting to call the model again (after an error)',
  nextCall: 'taking the next tool call',
  steeringCheck: 'checking for a correction',
  validatingArguments: 'checking the call’s arguments',
  beforeToolExecution: 'checking the call with the beforeToolExecution hooks',
  runningBeforeToolExecution: 'running the beforeToolExecution hooks',
  approvalCheck: 'checking whether the call needs approval',
  evaluatingApprovalRule: 'asking the tool whether this call needs approval',
  awaitingApproval: 'waiting for your approval',
  executingTool: 'running a tool',
  afterToolExecution: 'recording the tool’s result',
  runningAfterToolExecution: 'running the afterToolExecution hooks',
  afterTurn: 'ending the turn',
  runningAfterTurn: 'running the afterTurn hooks',
  turnEnd: 'ending the turn',
  nextTurn: 'starting the next turn',
  done: 'done: the model gave its final answer',
  failed: 'failed',
  cancelled: 'cancelled',
}

/** `key` is the state's own key (the last part of its path); `tool` names the call in a tool or approval wait. */
export function stateInWords(key: string, description: string | undefined, tool?: string): string {
  if (tool && key === 'awaitingApproval') return `waiting for your approval of ${tool}`
  if (tool && key === 'executingTool') return `running ${tool}`
  if (tool && key === 'runningBeforeToolExecution') return `running the beforeToolExecution hooks on ${tool}`
  return WORDS[key] ?? description?.split(/(?<=\.)\s/)[0]?.replace(/\.$/, '') ?? key
}

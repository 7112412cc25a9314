export {
  type ConsoleHub,
  type ConsoleHubOptions,
  ConsoleRequestError,
  createConsoleHub,
  type DecideResult,
} from './console-hub.ts'
export { type Console, type ConsoleOptions, startConsole } from './start-console.ts'
export type {
  EventView,
  InboxApproval,
  InboxItem,
  InboxQuestion,
  RunStatus,
  RunView,
  ServerMessage,
  SettledItem,
  SettledOutcome,
} from './view-model.ts'

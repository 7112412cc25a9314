/**
 * `@signalbox/cli/internal`: the command's parts that signalbox's own tests drive in-process.
 * Not part of the public API (unstable: names here may change in any release).
 */
export { CONNECT_TIMEOUT_MS } from './bus.ts'
export type { CommandContext, CommandIO } from './cli.ts'
export { directoryBucket } from './commands/host.ts'
export { RUN_INSPECT_OPTIONS, startRunInspection } from './commands/inspect.ts'
export { COMMANDS, main } from './main.ts'
export { createColorizer } from './output.ts'

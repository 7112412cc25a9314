import { type CommandContext, UsageError } from './cli.ts'

/**
 * Who is deciding or steering, for the audit: the first flag given, else `$USER`. Without
 * either there is no name to record, and a made-up one ("terminal") would pass for a person's:
 * refuse and say which flag to use.
 */
export function whoIsAt(context: CommandContext, flags: readonly string[]): string {
  for (const flag of flags) {
    const given = context.values[flag]
    if (typeof given === 'string' && given.trim() !== '') return given.trim()
  }
  const user = context.io.env.USER?.trim()
  if (user) return user
  throw new UsageError(
    `who is this? $USER is not set and the audit records a real name: pass --${flags[0]} NAME`,
    context.command,
  )
}

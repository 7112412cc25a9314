import { type CommandContext, UsageError } from './cli.ts'

/**
 * Who is deciding, steering or cancelling, for the audit: `--as` (every command spells it so),
 * else `$USER`. Without either there is no name to record, and a made-up one ("terminal", "cli")
 * would pass for a person's: refuse and say which flag to use.
 */
export function whoIsAt(context: CommandContext): string {
  const given = context.values.as
  if (typeof given === 'string' && given.trim() !== '') return given.trim()
  const user = context.io.env.USER?.trim()
  if (user) return user
  throw new UsageError('who is this? $USER is not set and the audit records a real name: pass --as NAME', context.command)
}

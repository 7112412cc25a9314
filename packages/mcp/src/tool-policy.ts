import { type ApprovalRule, ConfigError } from '@signalbox/core'

export type McpArguments = Record<string, unknown>

/** A tool as the server lists it (`tools/list`). */
export interface McpToolInfo {
  name: string
  description?: string
  title?: string
  inputSchema: Record<string, unknown>
  /** The server's hints (MCP `ToolAnnotations`): untrusted, as the spec says. */
  annotations?: {
    title?: string
    readOnlyHint?: boolean
    destructiveHint?: boolean
    idempotentHint?: boolean
    openWorldHint?: boolean
  }
}

/** Decides from the call whether a reviewer must approve it first. */
export type McpApprovalPredicate = (call: { toolName: string; arguments: McpArguments }) => boolean | Promise<boolean>

/**
 * `true` / `false` for every tool, a predicate over the call, or a rule per tool keyed by the
 * server's tool name (the tools not named get the default from their annotations; a name the
 * server lacks is an error).
 */
export type McpApproval = boolean | McpApprovalPredicate | Record<string, ApprovalRule<McpArguments>>

/**
 * Which of the server's tools the agent gets: `allow` only those, `deny` all but those (server
 * names; both may be given), or a predicate over the listed tool.
 */
export type McpToolFilter = { allow?: readonly string[]; deny?: readonly string[] } | ((tool: McpToolInfo) => boolean)

/**
 * The approval a tool's annotations ask for when `needsApproval` does not say: `readOnlyHint: true`
 * none; `destructiveHint: true` a reviewer's yes; `readOnlyHint: false` without `destructiveHint`
 * too (the MCP spec's default for a tool that writes is destructive); no hint at all, none.
 */
export function annotationApproval(info: McpToolInfo): boolean {
  const hints = info.annotations
  if (hints === undefined || hints.readOnlyHint === true) return false
  if (hints.destructiveHint === true) return true
  return hints.readOnlyHint === false && hints.destructiveHint === undefined
}

/** The approval rule of one tool: the option's, else (unless turned off) its annotations'. */
export function approvalFor(
  rule: McpApproval | undefined,
  info: McpToolInfo,
  useAnnotations: boolean,
): ApprovalRule<McpArguments> | undefined {
  if (rule === true || rule === false) return rule || undefined
  if (typeof rule === 'function') return (args) => rule({ toolName: info.name, arguments: args })
  if (rule !== undefined && Object.hasOwn(rule, info.name)) return rule[info.name]
  return useAnnotations && annotationApproval(info) ? true : undefined
}

/** Whether the filter lets the agent have the tool. */
export function allowed(filter: McpToolFilter | undefined, info: McpToolInfo): boolean {
  if (filter === undefined) return true
  if (typeof filter === 'function') return filter(info)
  if (filter.allow !== undefined && !filter.allow.includes(info.name)) return false
  return !(filter.deny ?? []).includes(info.name)
}

/**
 * Names in `needsApproval` or the filter that the server does not have are typos that would leave
 * a tool ungated or let through one meant to be kept out: checked on the first listing.
 */
export function checkNames(
  server: string,
  listed: readonly McpToolInfo[],
  options: { needsApproval?: McpApproval | undefined; filter?: McpToolFilter | undefined },
): void {
  const known = new Set(listed.map((t) => t.name))
  const named: [string, readonly string[]][] = []
  if (options.needsApproval !== undefined && typeof options.needsApproval === 'object') {
    named.push(['needsApproval', Object.keys(options.needsApproval)])
  }
  if (options.filter !== undefined && typeof options.filter === 'object') {
    named.push(['filter.allow', options.filter.allow ?? []], ['filter.deny', options.filter.deny ?? []])
  }
  for (const [option, names] of named) {
    const unknown = names.filter((name) => !known.has(name))
    if (unknown.length > 0) {
      throw new ConfigError(
        `${option} names ${unknown.map((n) => `"${n}"`).join(', ')}, which the MCP server "${server}" does not have (it has: ${[...known].join(', ')}).`,
        { server, unknown },
      )
    }
  }
}

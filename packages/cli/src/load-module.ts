import { existsSync } from 'node:fs'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import type { Tool } from '@signalbox/core'
import { type AgentModule, agentModuleProblems, toolProblems } from './agent-module.ts'
import { CliError } from './cli.ts'
import { isTypeScript, needsLoader, registerTypeScript } from './ts-loader.ts'

/**
 * Imports a module given on the command line; a TypeScript one through tsx when Node cannot load it
 * alone. `needs` are the command's own imports, awaited first: once tsx is registered, Node 20
 * sends every module loaded after it through tsx's hooks on a thread of their own (about 0.35 s of
 * CPU more for the packages a host loads). The command loads them anyway, so first costs nothing.
 */
export async function importUserModule(
  spec: string,
  cwd: string,
  needs: readonly Promise<unknown>[] = [],
): Promise<{ file: string; exports: Record<string, unknown> }> {
  await Promise.all(needs)
  const file = path.resolve(cwd, spec)
  if (!existsSync(file)) throw new CliError('MODULE_NOT_FOUND', `no such module: ${spec} (looked for ${file})`)
  const url = pathToFileURL(file).href
  try {
    try {
      return { file, exports: (await import(url)) as Record<string, unknown> }
    } catch (error) {
      if (!isTypeScript(file) || !needsLoader(error)) throw error
      await registerTypeScript(spec, cwd)
      // Node remembers the failed load of `url`: import it again under another URL.
      return { file, exports: (await import(`${url}?ts-loader`)) as Record<string, unknown> }
    }
  } catch (error) {
    if (CliError.is(error)) throw error
    const detail = error instanceof Error ? error.message : String(error)
    throw new CliError('MODULE_LOAD_FAILED', `could not load ${spec}: ${detail}`, { cause: error })
  }
}

/** The agent a module default-exports (`export default defineAgentModule({ ... })`). */
export async function loadAgentModule(
  spec: string,
  cwd: string,
  needs: readonly Promise<unknown>[] = [],
): Promise<{ file: string; agent: AgentModule }> {
  const { file, exports } = await importUserModule(spec, cwd, needs)
  const candidate = exports.default
  const problems = agentModuleProblems(candidate)
  if (problems.length > 0) {
    throw new CliError('MODULE_INVALID', `${spec} is not an agent module:\n${problems.map((p) => `  - ${p}`).join('\n')}`)
  }
  return { file, agent: candidate as AgentModule }
}

/** The tools a module exports: `export const tools = [...]` or `export default [...]`. */
export async function loadToolsModule(
  spec: string,
  cwd: string,
  needs: readonly Promise<unknown>[] = [],
): Promise<{ file: string; tools: Tool<any>[] }> {
  const { file, exports } = await importUserModule(spec, cwd, needs)
  const candidate = exports.tools ?? exports.default
  if (!Array.isArray(candidate)) {
    throw new CliError(
      'MODULE_INVALID',
      `${spec} exports no tools: use \`export const tools = [...]\` or \`export default [...]\``,
    )
  }
  const problems = candidate.flatMap((t, i) => toolProblems(t, `tools[${i}]`))
  if (candidate.length === 0) problems.push('the tools array is empty')
  const names = new Set<string>()
  for (const t of candidate as Tool[]) {
    if (names.has(t.name)) problems.push(`two tools are named "${t.name}"`)
    names.add(t.name)
  }
  if (problems.length > 0) throw new CliError('MODULE_INVALID', `${spec}: ${problems.join('; ')}`)
  return { file, tools: candidate as Tool<any>[] }
}

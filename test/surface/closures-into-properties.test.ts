/**
 * A function literal written straight into a property (`obj.onX = () => ...`, `this.#f = () => ...`)
 * is allocated by V8 in its old generation (the bytecode's `CreateClosure` is marked pretenured).
 * Made per run or per step, such a closure keeps everything it captured alive through young GCs
 * until the next full GC, and V8 then starts allocating the loop's short-lived objects in the old
 * generation too (docs/benchmarks.md, "Closures written straight into a property"). The packages
 * make such closures in a local and store the local; the places that write one straight into a
 * property are listed here, each made once for something as long-lived as the closure.
 */
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { expect, it } from 'vitest'
import { ROOT } from './entry-points.ts'
import { packageSources } from './package-sources.ts'

const WRITTEN_INTO_PROPERTY =
  /(\.[#\w]+|\[[^\]\n]+\])\s*=\s*(async\s+)?(\([^()\n]*\)|\w+)\s*=>|(\.[#\w]+|\[[^\]\n]+\])\s*=\s*(async\s+)?function\b/

/** Each made once for a longer-lived owner: a tool or hook set wrapped once, a connection, a socket, the action table. */
const ONCE = [
  'packages/actors/src/inspect/local.ts: if (ws) ws.onerror = () => {}',
  'packages/core/src/instrumentation.ts: wrapped.execute = (args, context) =>',
  "packages/core/src/instrumentation.ts: wrapped[point] = (context: HookWork['context']) =>",
  'packages/core/src/machine/action-table.ts: table[name] = ({ context }: { context: AgentContext }, params: never) => {',
  'packages/mcp/src/mcp-connection.ts: ;(transport as { setProtocolVersion?: (version: string) => void }).setProtocolVersion = (version) => {',
  'packages/mcp/src/mcp-connection.ts: client.onclose = () => this.lose(session)',
  'packages/mcp/src/mcp-connection.ts: client.onerror = () => {',
  'packages/otel/src/traced-services.ts: traced.execute = (args, toolContext) => {',
]

it('the packages write no per-run closure straight into a property (V8 would make it in its old generation)', () => {
  const found = packageSources().flatMap((file) =>
    readFileSync(file, 'utf8')
      .split('\n')
      .filter((line) => WRITTEN_INTO_PROPERTY.test(line) && !/^\s*(\/\/|\*)/.test(line))
      .map((line) => `${path.relative(ROOT, file)}: ${line.trim()}`),
  )
  expect(found.sort()).toEqual([...ONCE].sort())
})

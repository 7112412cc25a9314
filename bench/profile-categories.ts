/**
 * A CPU profile of `bench/profile.ts` summed by where the time goes (XState's actor per wait, its
 * snapshots, its transitions, the GC, signalbox's own code, the test kit), per tool step:
 *
 *   node --cpu-prof --cpu-prof-dir=/tmp/signalbox-prof --import tsx bench/profile.ts signalbox --steps 20
 *   node --import tsx bench/profile-categories.ts /tmp/signalbox-prof/<file>.cpuprofile --steps <tool steps it printed>
 *
 * The categories are by function name and file; module loading and idle time are left out of the
 * per-step figures (the profile includes the process's start).
 */
import { readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'

interface ProfileNode {
  id: number
  callFrame: { functionName: string; url: string }
}
interface Profile {
  nodes: ProfileNode[]
  samples: number[]
  timeDeltas: number[]
}

const { values, positionals } = parseArgs({ allowPositionals: true, options: { steps: { type: 'string' } } })
const file = positionals[0]
if (!file || !values.steps) throw new Error('usage: profile-categories.ts <file.cpuprofile> --steps N')
const steps = Number(values.steps)
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile

const ACTOR_LIFECYCLE =
  /^(Actor|createActor|resolveSpawn|spawnChild|resolveStop|stopChild|start|_stop|_stopProcedure|_complete|_error|Mailbox|enqueue|flush|_relay|_send|send|_process|update|_bookId|_register|_unregister|createSystem|getInitialSnapshot|transition)$/
const NOT_PER_STEP = new Set(['module loading (start-up)', 'idle'])

function category({ callFrame: { functionName: name, url } }: ProfileNode): string {
  if (name === '(garbage collector)') return 'garbage collector'
  if (name === '(idle)' || name === '(program)') return 'idle'
  if (url.includes('xstate')) {
    if (url.includes('xstate-actors') || ACTOR_LIFECYCLE.test(name))
      return 'XState: an actor per wait (create, start, stop, mailbox, promise logic)'
    if (/Snapshot|getStateValue|getValueFromAdj|getAdjList|getAllStateNodes|memo/.test(name))
      return 'XState: snapshots (state value, tags, active nodes)'
    return 'XState: transitions (microsteps, guards, actions, assigns)'
  }
  if (url.includes('abort_controller') || url.includes('event_target')) return "Node: each wait's AbortController"
  if (url.includes('/testing/') || url.includes('/bench/')) return 'test kit and bench (scripted model, driver)'
  if (url.includes('packages/')) return "signalbox's own code (packages/*/src)"
  if (
    url.includes('node:internal/modules') ||
    url.includes('tsx') ||
    url.includes('source_map') ||
    name === 'compileSourceTextModule'
  )
    return 'module loading (start-up)'
  return 'other (Node, zod, promises)'
}

const byId = new Map(profile.nodes.map((node) => [node.id, node]))
const sums = new Map<string, number>()
profile.samples.forEach((id, i) => {
  const c = category(byId.get(id) as ProfileNode)
  sums.set(c, (sums.get(c) ?? 0) + (profile.timeDeltas[i] ?? 0))
})
const perStep = [...sums].filter(([c]) => !NOT_PER_STEP.has(c)).sort((a, b) => b[1] - a[1])
const total = perStep.reduce((sum, [, us]) => sum + us, 0)
console.log(`${file}: ${steps} tool steps; ${(total / steps).toFixed(1)} µs of CPU per step outside start-up and idle`)
console.log('| where | µs / tool step | share |\n| --- | ---: | ---: |')
for (const [c, us] of perStep) console.log(`| ${c} | ${(us / steps).toFixed(1)} | ${((us / total) * 100).toFixed(0)}% |`)

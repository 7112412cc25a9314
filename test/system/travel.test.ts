/**
 * The travel example end to end (examples/travel/run.ts): a planner delegates to the seed's
 * trains agent and to a hotel agent served by `signalbox host` in a child process, over the real
 * NATS server, with one approval on the way; and the same in one process (--embedded). The
 * scripted models check every request they get (the planner's never holds the passenger's ID),
 * and the example exits 0 only when every conversation was played to its end.
 */
import { PASSENGER } from '@signalbox/examples/trains/agent.ts'
import { HOTEL_ANSWER, PLAN_ANSWER } from '@signalbox/examples/travel/script.ts'
import { describe, expect, it } from 'vitest'
import { NATS_URL, uniquePrefix } from '../support/env.ts'
import { cleanupServer, start } from './support.ts'

const RUN = 'examples/travel/run.ts'

function commonChecks(stdout: string) {
  expect(stdout).toContain(`Final answer\n  ${PLAN_ANSWER}\n`)
  expect(stdout).toMatch(/✔ done · answered by planner · 3 turns/)
  // The trains agent's own hooks ran inside the tree: the policy refusal, then tourist.
  expect(stdout).toContain(
    '    trains    tool.end           book_ticket · denied · "Blocked by policy: first class needs a manager’s approval.',
  )
  expect(stdout).toMatch(
    / {4}trains {4}tool\.end {11}book_ticket · executed · "Booked: train 101 to Mar del Plata, tourist class/,
  )
  // One approval, asked with the whole path, decided by the reviewer.
  expect(stdout).toContain(
    '    hotel     approval.requested book_hotel({"hotel":"Hotel Costa Galana","date":"Friday","nights":1}) · path planner › hotel',
  )
  expect(stdout).toMatch(
    /reviewer lucia sees book_hotel\(\{"hotel":"Hotel Costa Galana","date":"Friday","nights":1\}\) from planner › hotel \(run path run_\S+ › run_\S+\)/,
  )
  expect(stdout).toContain('    hotel     approval.decided   approved by lucia')
  expect(stdout).toContain(`  planner   tool.end           ask_hotel · executed · ${JSON.stringify(HOTEL_ANSWER).slice(0, 60)}`)
  // The passenger's ID never shows anywhere (masked inside the trains agent).
  expect(stdout).not.toContain(PASSENGER.dni)
}

describe('examples/travel/run.ts', () => {
  it('over NATS: the hotel agent in a child process (signalbox host), one approval, the plan', async () => {
    const prefix = uniquePrefix()
    cleanupServer(prefix)
    const proc = start([RUN, '--nats', NATS_URL, '--prefix', prefix])
    const { code } = await proc.exited
    const stdout = proc.stdout()
    expect(code, proc.output()).toBe(0)
    expect(proc.output()).toBe(stdout) // nothing on stderr
    commonChecks(stdout)
    expect(stdout).toContain(`hotel in a child process (signalbox host) · ${NATS_URL} · prefix ${prefix}`)
    expect(stdout).toContain(`hotel-host │ hosting 1 agent: hotel (find_hotels, book_hotel) on ${prefix}.agents.<id>.run`)
    expect(stdout).toMatch(/hotel-host │ \S+ → run\s+hotel run_\S+ · parent run_\S+ \(planner › hotel\)/)
    expect(stdout).toMatch(/hotel-host │ \S+ ← done\s+hotel run_\S+ · 3 turns/)
    expect(stdout).toContain('hotel-host │ agent host stopped')
  })

  it('--embedded: the same plan with every agent in one process, no bus', async () => {
    const proc = start([RUN, '--embedded'])
    const { code } = await proc.exited
    expect(code, proc.output()).toBe(0)
    commonChecks(proc.stdout())
    expect(proc.stdout()).toContain('one process, no bus (--embedded)')
    expect(proc.stdout()).not.toContain('hotel-host')
  })
})

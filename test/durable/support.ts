/** Shared set-up of the durable-run crash tests: a temp dir, the child agent, its printed lines. */
import { existsSync, readFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import type { AuditEntry } from '@signalbox/core'
import { type CrashChild, startCrashChild } from '../support/crash-harness.ts'
import type { ChildConfig } from './fixtures/durable-agent.ts'

const CHILD = 'test/durable/fixtures/durable-agent.ts'

export interface DurableDir {
  dir: string
  storeDir: string
  effects: string
  audit: string
  /** Lines the tools appended: the real side effects. */
  effectLines(): string[]
  auditEntries(): AuditEntry[]
  remove(): Promise<void>
}

export async function durableDir(): Promise<DurableDir> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'durable-run-'))
  const effects = path.join(dir, 'effects.txt')
  const audit = path.join(dir, 'audit.jsonl')
  const lines = (file: string) =>
    existsSync(file)
      ? readFileSync(file, 'utf8')
          .split('\n')
          .filter((line) => line !== '')
      : []
  return {
    dir,
    storeDir: path.join(dir, 'runs'),
    effects,
    audit,
    effectLines: () => lines(effects),
    auditEntries: () => lines(audit).map((line) => JSON.parse(line) as AuditEntry),
    remove: () => rm(dir, { recursive: true, force: true }),
  }
}

export interface Printed {
  type: string
  [key: string]: unknown
}

export interface DurableChild {
  child: CrashChild
  /** Resolves with the first printed line of `type` (and matching `where`, if given). */
  next(type: string, where?: (line: Printed) => boolean, timeoutMs?: number): Promise<Printed>
  lines(): Printed[]
}

export async function startDurableChild(
  dir: DurableDir,
  config: Omit<ChildConfig, 'storeDir' | 'effects' | 'audit'>,
): Promise<DurableChild> {
  const full: ChildConfig = { ...config, storeDir: dir.storeDir, effects: dir.effects, audit: dir.audit }
  const child = await startCrashChild(CHILD, { env: { DURABLE_CHILD: JSON.stringify(full) } })
  const lines = (): Printed[] =>
    child
      .stdout()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Printed)
  const next = async (type: string, where?: (line: Printed) => boolean, timeoutMs = 60_000): Promise<Printed> => {
    const matches = (line: Printed) => line.type === type && (where === undefined || where(line))
    let exited = false
    void child.exited.then(() => {
      exited = true
    })
    const until = Date.now() + timeoutMs
    for (;;) {
      const found = lines().find(matches)
      if (found) return found
      if (exited || Date.now() > until) {
        throw new Error(`the durable child printed no "${type}" line${exited ? ' (it exited)' : ''}:\n${child.output()}`)
      }
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  }
  return { child, next, lines }
}

/** The claw agent's child process in `mode` for `runId`, on the scripted model `server` (no reviewer of its own). */
export function clawChild(
  dir: DurableDir,
  server: { url: string },
  mode: ChildConfig['mode'],
  runId: string,
  extra: Partial<Omit<ChildConfig, 'storeDir' | 'effects' | 'audit' | 'mode' | 'runIds'>> = {},
): Promise<DurableChild> {
  return startDurableChild(dir, { modelUrl: server.url, model: 'claw', mode, runIds: [runId], reviewer: 'never', ...extra })
}

/** Resumes `runId` in a new child and waits for its result and its exit. */
export async function resumeToEnd(
  dir: DurableDir,
  server: { url: string },
  runId: string,
  extra: Parameters<typeof clawChild>[4] = {},
): Promise<{ result: Printed; child: DurableChild }> {
  const child = await clawChild(dir, server, 'resume', runId, extra)
  const result = await child.next('result')
  await child.child.exited
  return { result, child }
}

/** A scripted model's expectation: some tool message reads `text`, else `why` fails the script. */
export function readsTool(text: (content: string) => boolean, why: string) {
  return {
    expect: (request: { messages: { role: string; content?: unknown }[] }) =>
      request.messages.some((m) => m.role === 'tool' && typeof m.content === 'string' && text(m.content)) || why,
  }
}

/** Waits (on the wall clock: the child's deadline is absolute) until `deadline` has passed. */
export async function untilPast(deadline: number): Promise<void> {
  while (Date.now() <= deadline + 100) await new Promise((resolve) => setTimeout(resolve, 50))
}

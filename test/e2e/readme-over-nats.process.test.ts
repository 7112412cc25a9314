/**
 * The README's "Over NATS" section runs as written, on a private nats-server (its address put in
 * for 127.0.0.1:4222): the tool host and the reviewer from the first commands block (the reviewer
 * unattended here, `--auto approve --answer`), the TypeScript block as a program of its own
 * against the scripted model, then the commands that read what happened.
 */

import { readFileSync } from 'node:fs'
import { mkdir, rm, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { type ScriptedModelServer, startScriptedModelServer } from '@signalbox/core/testing'
import { interactiveClaw } from '@signalbox/examples/claw/script.ts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { cleanupAll, ROOT, runCli, startProcess } from '../cli/support.ts'
import { tsScript } from '../support/built.ts'
import { type NatsServer, startNatsServer } from '../support/nats-server.ts'

const README_URL = 'nats://127.0.0.1:4222'

/** The fenced blocks of the README section that starts with `heading`, in order. */
function sectionBlocks(heading: string): { lang: string; code: string }[] {
  const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8')
  const start = readme.indexOf(`\n${heading}\n`)
  if (start < 0) throw new Error(`README.md has no "${heading}" section`)
  const end = readme.indexOf('\n## ', start + heading.length + 2)
  const section = readme.slice(start, end < 0 ? undefined : end)
  return [...section.matchAll(/```(\w+)\n([\s\S]*?)```/g)].map(([, lang, code]) => ({
    lang: lang as string,
    code: code as string,
  }))
}

/** `pnpm signalbox a b "c d" # note` → ['a', 'b', 'c d'] (the words after `pnpm signalbox`). */
function signalboxArgs(line: string): string[] {
  const words = [...line.replace(/\s+#.*$/, '').matchAll(/"([^"]*)"|(\S+)/g)].map(
    ([, quoted, word]) => quoted ?? (word as string),
  )
  expect(words.slice(0, 2)).toEqual(['pnpm', 'signalbox'])
  return words.slice(2)
}

let nats: NatsServer
let model: ScriptedModelServer
// Where the README says to save it: in the examples package (which depends on the packages by name).
const scratch = path.join(ROOT, 'examples', '.tmp')

beforeAll(async () => {
  nats = await startNatsServer()
  model = await startScriptedModelServer({ scripts: { 'llama3.1': interactiveClaw } })
})

afterAll(async () => {
  await cleanupAll()
  await model?.close()
  await nats?.dispose()
  await rm(scratch, { recursive: true, force: true })
})

describe('README: Over NATS', () => {
  it('the tool host, the reviewer and the agent program run as written; steer and audit read the result', async () => {
    // The first three blocks: services, the agent, what to run beside it (the trust snippet follows).
    const blocks = sectionBlocks('## Over NATS')
      .slice(0, 3)
      .map((b) => ({ ...b, code: b.code.replaceAll(README_URL, nats.url) }))
    expect(blocks.map((b) => b.lang)).toEqual(['sh', 'ts', 'sh'])
    const [services, program, after] = blocks as [(typeof blocks)[0], (typeof blocks)[0], (typeof blocks)[0]]

    const [toolsLine, reviewLine] = services.code.trim().split('\n') as [string, string]
    const tools = startProcess(signalboxArgs(toolsLine), { name: 'tools' })
    // At a terminal the person answers; here the same command decides unattended.
    const reviewer = startProcess(
      [...signalboxArgs(reviewLine), '--as', 'tina', '--auto', 'approve', '--answer', 'The polar bear!'],
      {
        name: 'review',
      },
    )
    await Promise.all([
      tools.waitFor('serving 2 tools: move_claw, drop_claw (needs approval)'),
      reviewer.waitFor('reviewing approval requests'),
    ])

    await mkdir(scratch, { recursive: true })
    const file = path.join(scratch, `readme-over-nats-${process.pid}.ts`)
    await writeFile(file, program.code)
    const agent = startProcess([file], {
      name: 'agent',
      command: [process.execPath, ...tsScript(file)],
      env: { OPENAI_BASE_URL: model.url, OPENAI_API_KEY: 'scripted' },
    })
    expect(await agent.exited, agent.output).toBe(0)
    expect(agent.stdout.trim()).toBe('Got it! The polar bear is in the prize chute.')
    // The reviewer answered the question and approved the drop; the tool host ran it.
    await reviewer.waitFor(/approved drop_claw/)
    await tools.waitFor('← ok     drop_claw')

    const commands = after.code.trim().split('\n')
    const steerLine = commands.find((line) => line.includes(' steer ')) as string
    const auditLine = commands.find((line) => line.includes(' audit ')) as string
    const steered = await runCli([...signalboxArgs(steerLine), '--as', 'ops'])
    expect(steered.code, steered.output).toBe(0)
    expect(steered.stderr).toContain('no process of agent "claw" is on the bus right now')
    const audit = await runCli(signalboxArgs(auditLine))
    expect(audit.code, audit.output).toBe(0)
    expect(audit.stdout).toMatch(/claw\s+run_\S+\s+ask_kid\s+question\.answered\s+tina\s+The polar bear!/)
    expect(audit.stdout).toMatch(/claw\s+run_\S+\s+drop_claw\s+approval\.granted\s+tina\s+approved/)
  })
})

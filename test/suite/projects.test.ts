/**
 * The suite's projects (test/support/projects.ts): every test file on disk is in exactly one
 * vitest project, as vitest itself resolves them, and the run-time guard that holds a file to its
 * project is active (this file is a unit test: starting a process or reaching NATS must throw).
 */
import childProcess, { execFile, spawn } from 'node:child_process'
import { readdirSync } from 'node:fs'
import net from 'node:net'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { createVitest } from 'vitest/node'
import { PROJECTS } from '../support/projects.ts'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))

/** Every `*.test.ts` under the packages' test folders and test/, node_modules aside. */
function testFilesOnDisk(): string[] {
  const roots = ['test', ...readdirSync(path.join(ROOT, 'packages')).map((p) => path.join('packages', p, 'test'))]
  return roots.flatMap((root) => {
    let entries: string[]
    try {
      entries = readdirSync(path.join(ROOT, root), { recursive: true, encoding: 'utf8' })
    } catch {
      return []
    }
    return entries
      .filter((f) => f.endsWith('.test.ts') && !f.split(path.sep).includes('node_modules'))
      .map((f) => path.join(root, f))
  })
}

describe('the vitest projects', () => {
  it('every test file on disk belongs to exactly one project', { timeout: 60_000 }, async () => {
    const vitest = await createVitest('test', { watch: false, root: ROOT })
    try {
      const specs = await vitest.globTestSpecifications()
      const projectsOf = new Map<string, string[]>()
      for (const spec of specs) {
        const file = path.relative(ROOT, spec.moduleId)
        projectsOf.set(file, [...(projectsOf.get(file) ?? []), spec.project.name])
      }
      expect(vitest.projects.map((p) => p.name).sort()).toEqual([...PROJECTS].sort())
      const files = testFilesOnDisk().sort()
      expect(files.length).toBeGreaterThan(100)
      const wrong = files
        .map((file) => ({ file, projects: projectsOf.get(file) ?? [] }))
        .filter(({ projects }) => projects.length !== 1)
      expect(wrong).toEqual([])
      // And vitest runs nothing that is not on disk under those folders.
      expect([...projectsOf.keys()].sort()).toEqual(files)
    } finally {
      await vitest.close()
    }
  })

  it('in the unit project, starting a child process throws and names the project to use', () => {
    expect(process.env.SIGNALBOX_TEST_PROJECT).toBe('unit')
    expect(() => spawn(process.execPath, ['-v'])).toThrow(/belongs in the "processes" project/)
    expect(() => execFile(process.execPath, ['-v'])).toThrow(/belongs in the "processes" project/)
    expect(() => childProcess.execSync('true')).toThrow(/belongs in the "processes" project/)
    expect(() => spawn('nats-server', ['-v'])).toThrow(/belongs in the "nats" project/)
  })

  it('in the unit project, connecting to the shared NATS server throws and names the project to use', () => {
    const socket = new net.Socket()
    try {
      expect(() => socket.connect({ host: '127.0.0.1', port: 4222 })).toThrow(/belongs in the "nats" project/)
      expect(() => net.connect(4222, '127.0.0.1')).toThrow(/belongs in the "nats" project/)
    } finally {
      socket.destroy()
    }
  })
})

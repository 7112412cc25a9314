import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { importUserModule } from '../src/load-module.ts'

let dir: string
const seen = globalThis as { signalboxLoadModuleTest?: string[] }

beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'signalbox-load-module-'))
  seen.signalboxLoadModuleTest = []
  await writeFile(path.join(dir, 'tools.mjs'), 'globalThis.signalboxLoadModuleTest.push("module")\nexport const tools = []\n')
})
afterEach(async () => {
  delete seen.signalboxLoadModuleTest
  await rm(dir, { recursive: true, force: true })
})

describe('importUserModule', () => {
  it("loads the command's own imports before the user's module (after it, tsx's hooks would see them all)", async () => {
    const needs = [Promise.resolve().then(() => seen.signalboxLoadModuleTest?.push('need'))]
    const { exports } = await importUserModule('tools.mjs', dir, needs)
    expect(exports.tools).toEqual([])
    expect(seen.signalboxLoadModuleTest).toEqual(['need', 'module'])
  })

  it('does not load the module at all when one of those imports fails', async () => {
    const failed = Promise.reject(new Error('no such package'))
    await expect(importUserModule('tools.mjs', dir, [failed])).rejects.toThrow('no such package')
    expect(seen.signalboxLoadModuleTest).toEqual([])
  })
})

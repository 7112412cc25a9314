/**
 * `signalbox keys gen`: a user nkey without the `nk` tool. The seed signs, the public key printed
 * beside it verifies; written with --out, the seed file is private (0600) and never replaced by
 * accident. (test/cli/keys-gen.process.test.ts logs in to a nats-server with the key.)
 */
import { chmod, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { createSigner, isValidPublicKey, verifySignature } from '@signalbox/actors/trust'
import { describe, expect, it, onTestFinished } from 'vitest'
import { runMain } from '../../../test/support/cli-in-process.ts'

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'signalbox-keys-'))
  onTestFinished(() => rm(dir, { recursive: true, force: true }))
  return dir
}

/** The seed and the public key go together: what the seed signs, the public key verifies. */
function expectPair(seed: string, publicKey: string): void {
  expect(seed).toMatch(/^SU[A-Z2-7]{56}$/)
  expect(isValidPublicKey(publicKey)).toBe(true)
  expect(publicKey).toMatch(/^U/)
  const signer = createSigner(seed)
  expect(signer.publicKey).toBe(publicKey)
  const signed = signer.sign({ v: 1, type: 'steer', steerId: 's1', text: 'hi', from: 'tina', sentAt: 1, agentId: 'claw' })
  expect(verifySignature(signed)).toMatchObject({ ok: true })
}

describe('signalbox keys gen', () => {
  it('prints a fresh seed and its public key, as nk -gen user -pubout does; two runs, two keys', async () => {
    const first = await runMain(['keys', 'gen'])
    expect(first.code, first.output).toBe(0)
    const [seed, publicKey, ...rest] = first.stdout.split('\n').filter(Boolean)
    expect(rest).toEqual([])
    expectPair(seed as string, publicKey as string)
    expect(first.stderr).toContain('The first line is the seed: keep it secret')
    const second = await runMain(['keys', 'gen', '--json'])
    const json = JSON.parse(second.stdout) as { seed: string; publicKey: string }
    expectPair(json.seed, json.publicKey)
    expect(json.seed).not.toBe(seed)
  })

  it('--out writes the seed to a file only its owner can read and prints the public key alone', async () => {
    const dir = await tempDir()
    const made = await runMain(['keys', 'gen', '--out', 'tina.nk'], { cwd: dir })
    expect(made.code, made.output).toBe(0)
    const publicKey = made.stdout.trim()
    const file = path.join(dir, 'tina.nk')
    const seed = (await readFile(file, 'utf8')).trim()
    expectPair(seed, publicKey)
    expect(made.output).not.toContain(seed)
    expect((await stat(file)).mode & 0o777).toBe(0o600)
    expect(made.stderr).toContain('seed written to tina.nk (mode 0600)')

    // An existing file may hold a key in use: kept, unless --force.
    const again = await runMain(['keys', 'gen', '--out', 'tina.nk'], { cwd: dir })
    expect(again.code).toBe(1)
    expect(again.stderr).toContain(
      'error [KEY_FILE_EXISTS]: tina.nk exists: it may hold a key in use; pass --force to replace it',
    )
    expect((await readFile(file, 'utf8')).trim()).toBe(seed)

    await chmod(file, 0o644)
    const forced = await runMain(['keys', 'gen', '--out', 'tina.nk', '--force', '--json'], { cwd: dir })
    expect(forced.code, forced.output).toBe(0)
    const replaced = JSON.parse(forced.stdout) as { publicKey: string; file: string }
    expect(replaced.file).toBe('tina.nk')
    expectPair((await readFile(file, 'utf8')).trim(), replaced.publicKey)
    expect(replaced.publicKey).not.toBe(publicKey)
    expect((await stat(file)).mode & 0o777).toBe(0o600)
  })

  it('a file it cannot write is a clear error', async () => {
    const dir = await tempDir()
    await writeFile(path.join(dir, 'not-a-dir'), '')
    const failed = await runMain(['keys', 'gen', '--out', 'not-a-dir/key.nk'], { cwd: dir })
    expect(failed.code).toBe(1)
    expect(failed.stderr).toContain('error [KEY_FILE_UNWRITABLE]: cannot write the seed to not-a-dir/key.nk')
  })

  it('has help, and `keys` alone asks for its sub-command', async () => {
    const help = await runMain(['keys', 'gen', '--help'])
    expect(help.code).toBe(0)
    expect(help.stdout).toContain('Usage: signalbox keys gen [--out <file>] [--force] [flags]')
    expect(help.stdout).toContain('--out <file>')
    const group = await runMain(['keys', '--help'])
    expect(group.stdout).toBe(help.stdout)
    const bare = await runMain(['keys'])
    expect(bare.code).toBe(2)
    expect(bare.stderr).toContain('keys needs a sub-command: signalbox keys gen')
  })
})

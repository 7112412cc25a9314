/**
 * `scripts/test.sh` on a machine without tmux, Chromium or nats-server: on Debian as root it
 * installs them with apt-get (not exercised here: it would change this machine); everywhere else
 * it says what is missing and how to install it, and stops before running anything.
 */
import { spawnSync } from 'node:child_process'
import { mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'

const SCRIPT = fileURLToPath(new URL('../../scripts/test.sh', import.meta.url))
const dir = mkdtempSync(path.join(tmpdir(), 'signalbox-test-sh-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** A PATH with the shell's basic tools only: no tmux, chromium, nats-server, apt-get or pnpm. */
const bin = path.join(dir, 'bin')
spawnSync('mkdir', ['-p', bin])
for (const tool of ['bash', 'dirname', 'id', 'uname', 'grep', 'tr', 'sed', 'cat']) {
  const found = spawnSync('bash', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).stdout.trim()
  if (found) symlinkSync(realpathSync(found), path.join(bin, tool))
}

function runOn(osRelease: string, args: string[] = []) {
  const file = path.join(dir, `os-release-${osRelease.replace(/\W/g, '')}`)
  writeFileSync(file, `${osRelease}\n`)
  return spawnSync(path.join(bin, 'bash'), [SCRIPT, ...args], {
    env: { PATH: bin, SIGNALBOX_OS_RELEASE: file },
    encoding: 'utf8',
  })
}

describe('scripts/test.sh without its tools', () => {
  it.each([
    ['ID=fedora', 'sudo dnf install tmux chromium nats-server'],
    ['ID=arch', "with your system's package manager"],
    ['ID=ubuntu\nID_LIKE=debian', 'sudo apt-get install tmux chromium nats-server'],
  ])('on %j it names what is missing and how to install it', (osRelease, how) => {
    const result = runOn(osRelease)
    expect(result.status).toBe(1)
    expect(result.stderr).toContain('the tests need tmux chromium nats-server, which this machine lacks')
    expect(result.stderr).toContain(how)
    expect(result.stderr).toContain('https://github.com/nats-io/nats-server/releases')
    expect(result.stderr).not.toContain('installing')
  })

  it.each([
    [['--project', 'browser'], 'chromium nats-server'],
    [['--project=nats'], 'nats-server'],
    [['--project', 'processes', '--project', 'unit'], 'tmux nats-server'],
  ])('with %j it asks only for what those projects use', (args, needs) => {
    const result = runOn('ID=fedora', args)
    expect(result.status).toBe(1)
    expect(result.stderr).toContain(`the tests need ${needs}, which this machine lacks`)
  })

  it('with --project unit it needs none of them and goes on to vitest (here: no pnpm on PATH)', () => {
    const result = runOn('ID=fedora', ['--project', 'unit'])
    expect(result.stderr).not.toContain('which this machine lacks')
    expect(result.stderr).toMatch(/pnpm: (command )?not found/)
    expect(result.status).toBe(127)
  })
})

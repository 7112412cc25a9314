/**
 * The distributed demo: the claw-machine agent, its tool host and a reviewer as three processes
 * talking over NATS. Watch a remote approval happen:
 *
 *   pnpm demo:distributed            you are the reviewer (and Tina): answer, approve or deny
 *   pnpm demo:distributed --auto     unattended: the reviewer approves and answers by itself
 *
 * Needs a NATS server with JetStream (`nats-server -js`) at SIGNALBOX_NATS_URL, else
 * nats://127.0.0.1:4222. Flags: --nats <url>, --prefix <prefix>, --auto.
 *
 * What runs (each line of output is prefixed with its process's name):
 *   tools     signalbox tools serve examples/distributed/claw-tools.ts     (move_claw, drop_claw)
 *   reviewer  signalbox review --as tina                                   (foreground, interactive)
 *   agent     signalbox run examples/distributed/claw-agent.ts --scripted  (the claw agent, offline model)
 * When the agent's run ends, the tool host and the reviewer are stopped (SIGTERM) and the demo exits
 * with the agent's exit code.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import net from 'node:net'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import pc from 'picocolors'
import { linePrefixer } from '../shared/line-prefixer.ts'
import { colorsEnabled } from '../shared/trace.ts'

const here = path.dirname(fileURLToPath(import.meta.url))
const root = path.resolve(here, '../..')
const BIN = path.join(root, 'packages/cli/bin/signalbox.js')
const STOP_GRACE_MS = 5_000
const READY_TIMEOUT_MS = 20_000

const { values } = parseArgs({
  options: {
    auto: { type: 'boolean' },
    nats: { type: 'string' },
    prefix: { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  },
  strict: true,
})
if (values.help) {
  console.log(
    [
      'pnpm demo:distributed [--auto] [--nats <url>] [--prefix <prefix>]',
      '',
      'Starts the claw-machine demo as three processes over NATS: a tool host, a reviewer (you,',
      'in this terminal) and the agent. --auto (or no terminal on stdin): the reviewer approves and',
      'answers by itself. --nats defaults to $SIGNALBOX_NATS_URL, else nats://127.0.0.1:4222.',
    ].join('\n'),
  )
  process.exit(0)
}

const natsUrl = values.nats ?? process.env.SIGNALBOX_NATS_URL ?? 'nats://127.0.0.1:4222'
const prefix = values.prefix ?? 'signalbox.v1'
const auto = values.auto === true || !process.stdin.isTTY
const colors = colorsEnabled(process.env, process.stdout)
const c = pc.createColors(colors)
const NAME_WIDTH = 8

const say = linePrefixer(`${c.bold('demo'.padEnd(NAME_WIDTH))} ${c.dim('│')} `, (text) => process.stdout.write(text))
const log = (text = '') => say(`${text}\n`)

interface Proc {
  name: string
  child: ChildProcess
  output: string
  exited: Promise<number>
}

const procs: Proc[] = []

function start(name: string, color: (s: string) => string, args: string[], options: { interactive?: boolean } = {}): Proc {
  const child = spawn(process.execPath, [BIN, ...args, '--nats', natsUrl, '--prefix', prefix], {
    cwd: root,
    stdio: [options.interactive ? 'inherit' : 'ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...(colors ? { FORCE_COLOR: '1' } : { NO_COLOR: '1' }) },
  })
  const label = `${color(name.padEnd(NAME_WIDTH))} ${c.dim('│')} `
  const proc: Proc = {
    name,
    child,
    output: '',
    exited: new Promise((resolve) => {
      child.once('exit', (code, signal) => resolve(code ?? (signal === 'SIGINT' ? 130 : 1)))
      child.once('error', (error) => {
        log(c.red(`${name}: ${error.message}`))
        resolve(1)
      })
    }),
  }
  const promptsEndLines = options.interactive === true
  const toStdout = linePrefixer(label, (text) => process.stdout.write(text), { promptsEndLines })
  const toStderr = linePrefixer(label, (text) => process.stderr.write(text))
  child.stdout?.on('data', (chunk: Buffer) => {
    const text = chunk.toString('utf8')
    proc.output += text
    toStdout(text)
  })
  child.stderr?.on('data', (chunk: Buffer) => {
    const text = chunk.toString('utf8')
    proc.output += text
    toStderr(text)
  })
  procs.push(proc)
  return proc
}

/** Resolves when `proc` printed `marker`; rejects if it exits first or takes too long. */
function ready(proc: Proc, marker: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => finish(new Error(`${proc.name} was not ready after ${READY_TIMEOUT_MS / 1000} s`)),
      READY_TIMEOUT_MS,
    )
    const check = () => {
      if (proc.output.includes(marker)) finish()
    }
    const finish = (error?: Error) => {
      clearTimeout(timer)
      proc.child.stdout?.off('data', check)
      proc.child.stderr?.off('data', check)
      if (error) reject(error)
      else resolve()
    }
    proc.child.stdout?.on('data', check)
    proc.child.stderr?.on('data', check)
    void proc.exited.then((code) => finish(new Error(`${proc.name} exited (code ${code}) before it was ready`)))
    check()
  })
}

async function stop(proc: Proc): Promise<number> {
  const { child } = proc
  if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
    child.kill('SIGTERM')
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS)
    const code = await proc.exited
    clearTimeout(timer)
    return code
  }
  return proc.exited
}

function reachable(url: string, timeoutMs = 2_000): Promise<boolean> {
  let host = '127.0.0.1'
  let port = 4222
  try {
    const parsed = new URL(url.split(',')[0] as string)
    host = parsed.hostname || host
    port = Number(parsed.port) || port
  } catch {
    // leave the defaults; the processes will report the problem
  }
  return new Promise((resolve) => {
    const socket = net.connect({ host, port })
    const done = (ok: boolean) => {
      clearTimeout(timer)
      socket.destroy()
      resolve(ok)
    }
    const timer = setTimeout(() => done(false), timeoutMs)
    socket.once('connect', () => done(true))
    socket.once('error', () => done(false))
  })
}

let interrupted = false
process.on('SIGINT', () => {
  // The terminal sent SIGINT to the whole process group: each process stops on its own.
  interrupted = true
})
process.on('SIGTERM', () => {
  interrupted = true
  for (const proc of procs) proc.child.kill('SIGTERM')
})

async function main(): Promise<number> {
  log(c.bold('signalbox · the distributed claw machine'))
  log(`NATS ${natsUrl} · prefix ${prefix} · reviewer: ${auto ? 'automatic (--auto)' : 'you, in this terminal'}`)
  if (!(await reachable(natsUrl))) {
    log(c.red(`NATS is not reachable at ${natsUrl}. Start one with JetStream (nats-server -js), or set SIGNALBOX_NATS_URL.`))
    return 1
  }
  log(c.dim('1. a tool host serves move_claw and drop_claw (the claw machine lives there)'))
  log(c.dim(`2. a reviewer (Tina) approves calls and answers questions${auto ? ', automatically' : ': that is you'}`))
  const tools = start('tools', c.green, ['tools', 'serve', 'examples/distributed/claw-tools.ts'])
  const reviewerArgs = ['review', '--as', 'tina', '--agent', 'claw']
  if (auto) reviewerArgs.push('--auto', 'approve', '--answer', 'The polar bear!')
  const reviewer = start('reviewer', c.yellow, reviewerArgs, { interactive: !auto })
  await Promise.all([ready(tools, 'serving '), ready(reviewer, 'reviewing approval requests')])
  log(c.dim('3. the agent runs; drop_claw needs approval, so its request goes to the reviewer over NATS'))
  if (!auto) log(c.bold('   Answer the question, then type y (or n and a reason) when the drop is shown.'))
  const agent = start('agent', c.cyan, ['run', 'examples/distributed/claw-agent.ts', '--scripted'])
  const code = await agent.exited
  log(c.dim(`the agent exited with code ${code}: stopping the tool host and the reviewer`))
  const [toolsCode, reviewerCode] = await Promise.all([stop(tools), stop(reviewer)])
  const clean = toolsCode === 0 && reviewerCode === 0
  log(
    `${code === 0 ? c.green('✔ done') : c.red('✘ the run did not finish')} · agent ${code} · tools ${toolsCode} · reviewer ${reviewerCode}${clean ? '' : c.red(' (not a clean stop)')}`,
  )
  if (code === 0) log(c.dim(`the decisions are in the audit trail: pnpm signalbox audit --nats ${natsUrl} --prefix ${prefix}`))
  if (interrupted) return 130
  return code === 0 && !clean ? 1 : code
}

let exitCode: number
try {
  exitCode = await main()
} catch (error) {
  log(c.red(error instanceof Error ? error.message : String(error)))
  exitCode = 1
} finally {
  await Promise.all(procs.map((proc) => stop(proc)))
}
process.exit(exitCode)

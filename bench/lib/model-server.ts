/**
 * The scripted model server (real HTTP, the real chat-completions wire format) for the HTTP
 * scenarios. By default it runs in a child process, so its JSON parsing and GC do not share the
 * measured process's event loop and heap (on 2 cores: one for the loops, one for the "model").
 * `--server in-process` keeps it in the same process instead.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { type ScriptedModelServer, startScriptedModelServer } from '@signalbox/core/testing'
import { parkingResponder } from './parking.ts'
import { responder } from './workload.ts'

export interface BenchServer {
  url: string
  where: 'child-process' | 'in-process'
  close(): Promise<void>
}

/**
 * Starts the server with the bench responder. The server records every request it receives (for
 * tests) and has no switch to stop that; the bench forgets them every 50 ms so the recording does
 * not grow the heap for the whole run.
 */
export async function startInThisProcess(): Promise<{ server: ScriptedModelServer; stop: () => Promise<void> }> {
  const parking = parkingResponder()
  const server = await startScriptedModelServer({
    scripts: { '*': (request, index) => parking(request) ?? responder(request, index) },
    // Idle gaps between scenarios (a full GC, a table printed) must not race the server's close.
    keepAliveTimeoutMs: 120_000,
  })
  const forget = setInterval(() => {
    server.requests.length = 0
  }, 50)
  forget.unref()
  return {
    server,
    stop: async () => {
      clearInterval(forget)
      if (server.failures.length > 0) throw server.failures[0]
      await server.close()
    },
  }
}

export async function startBenchServer(where: 'child-process' | 'in-process'): Promise<BenchServer> {
  if (where === 'in-process') {
    const { server, stop } = await startInThisProcess()
    return { url: server.url, where, close: stop }
  }
  const entry = fileURLToPath(new URL('./model-server-child.ts', import.meta.url))
  // Same node, same loader flags (tsx) as this process.
  const child: ChildProcess = spawn(process.execPath, [...process.execArgv.filter((a) => !a.startsWith('--cpu-prof')), entry], {
    stdio: ['pipe', 'pipe', 'inherit'],
  })
  const url = await new Promise<string>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! })
    lines.once('line', (line) => {
      try {
        resolve((JSON.parse(line) as { url: string }).url)
      } catch (error) {
        reject(error)
      }
    })
    child.once('exit', (code) => reject(new Error(`model server child exited early (code ${code})`)))
  })
  return {
    url,
    where,
    close: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve()
        child.once('exit', () => resolve())
        // Closing stdin asks the child to stop; the kill is the fallback.
        child.stdin?.end()
        setTimeout(() => child.kill(), 2000).unref()
      }),
  }
}

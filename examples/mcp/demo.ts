/**
 * `pnpm exec tsx examples/mcp/demo.ts`: an agent uses the tools of a real MCP server, the
 * reference filesystem server (`@modelcontextprotocol/server-filesystem`), confined to a temp
 * folder. `write_file` needs a reviewer's yes; here a policy reviewer approves Markdown files only.
 * Offline by default (the scripted model over HTTP); SIGNALBOX_MODEL picks a real endpoint.
 */
import { mkdtemp, readFile, realpath, rm, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import os from 'node:os'
import path from 'node:path'
import { createAgent, policyReviewer } from '@signalbox/core'
import { mcpTools } from '@signalbox/mcp'
import { demoArgs } from '../shared/demo-args.ts'
import { openDemoModel } from '../shared/model.ts'
import { createTrace, exitQuietlyOnBrokenPipe } from '../shared/trace.ts'
import { FILES_MODEL, filesPrompt, filesScript, TIMETABLE } from './script.ts'

exitQuietlyOnBrokenPipe()
demoArgs([
  'tsx examples/mcp/demo.ts [--scripted]',
  '',
  'An agent uses the tools of a real MCP server (the reference filesystem server, confined to a',
  'temp folder); write_file needs a yes, which a policy reviewer gives for Markdown files only.',
])
const trace = createTrace()
const { c } = trace
const require = createRequire(import.meta.url)
const server = path.join(path.dirname(require.resolve('@modelcontextprotocol/server-filesystem/package.json')), 'dist/index.js')

// Its real path: the filesystem server resolves symlinks (macOS's /tmp) before checking access.
const dir = await realpath(await mkdtemp(path.join(os.tmpdir(), 'signalbox-mcp-demo-')))
await writeFile(path.join(dir, 'timetable.txt'), `${TIMETABLE}\n`)
const model = await openDemoModel({ scripts: { [FILES_MODEL]: filesScript(dir) } })
// The server starts on the first tools() and stops on close(); every agent given these tools shares it.
const files = mcpTools({
  name: 'filesystem',
  command: process.execPath,
  args: [server, dir],
  stderr: 'ignore',
  needsApproval: { write_file: true },
})

try {
  trace.line(c.bold('signalbox · mcp: an MCP server’s tools, behind an approval'))
  trace.line(`${c.dim('model   ')} ${model.describe(FILES_MODEL)}`)
  trace.line(`${c.dim('server  ')} @modelcontextprotocol/server-filesystem on ${dir}`)
  const tools = await files.tools()
  trace.line(`${c.dim('tools   ')} ${tools.map((t) => (t.needsApproval ? `${t.name} (needs approval)` : t.name)).join(', ')}`)
  trace.line(`${c.dim('review  ')} a policy: write_file only for *.md files`)
  trace.line()

  const agent = createAgent({
    id: 'librarian',
    provider: model.provider(FILES_MODEL),
    tools,
    reviewer: policyReviewer(
      (request) => {
        const target = String((request.arguments as { path?: unknown }).path ?? '')
        return target.endsWith('.md') ? true : { approved: false, reason: 'only Markdown files may be written here' }
      },
      { name: 'md-only policy' },
    ),
  })
  trace.events(agent)
  const startedAt = Date.now()
  const handle = agent.start(filesPrompt(dir))
  trace.states(handle)
  const result = await handle.result
  trace.result(result, startedAt)
  trace.line()
  trace.line(c.dim(`summary.md on disk, written by the MCP server:`))
  trace.line((await readFile(path.join(dir, 'summary.md'), 'utf8')).trimEnd())
  model.assertDone()
} catch (error) {
  trace.failure(error)
  process.exitCode = 1
} finally {
  await files.close()
  await model.close()
  await rm(dir, { recursive: true, force: true })
}

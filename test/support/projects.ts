/**
 * The test suite's vitest projects, from the heaviest real part a test file uses to the lightest:
 *
 *   browser    drives Chromium (playwright-core)
 *   processes  starts child processes: the CLI, crash children, MCP servers, npm, tmux
 *   nats       talks to NATS (the shared server on 127.0.0.1:4222, or servers it spawns)
 *   unit       none of these: runs anywhere
 *
 * A file belongs to the first project whose globs match it, so each file is in exactly one (the
 * guard test `test/suite/projects.test.ts` checks it against vitest's own file lists). New files
 * fall into the folder's project; name a file `*.browser.test.ts`, `*.process.test.ts` or
 * `*.nats.test.ts` to place it anywhere. The setup file `project-guard.ts` makes a misplaced test
 * fail: outside `processes`/`browser` starting a child process throws, and outside `nats` (and the
 * heavier ones) so does connecting to the shared NATS server or spawning one.
 */

export const PROJECTS = ['browser', 'processes', 'nats', 'unit'] as const
export type ProjectName = (typeof PROJECTS)[number]

/** Where vitest looks for test files at all. */
export const TEST_ROOTS = ['packages/*/test/**/*.test.ts', 'test/**/*.test.ts']

/** The globs of each project but `unit` (which takes every test file the others leave). */
export const PROJECT_GLOBS: Record<Exclude<ProjectName, 'unit'>, string[]> = {
  browser: [
    '**/*.browser.test.ts',
    'test/console/console.test.ts',
    'test/console/console-trust.test.ts',
    'test/console/demo.test.ts',
    'test/console/withdrawn.test.ts',
    'test/inspect/relay.e2e.test.ts',
  ],
  processes: [
    '**/*.process.test.ts',
    'test/bench/**/*.test.ts',
    'test/cli/**/*.test.ts',
    'test/cluster/**/*.test.ts',
    'test/console/**/*.test.ts',
    'test/durable/**/*.test.ts',
    'test/e2e/**/*.test.ts',
    'test/foreign/**/*.test.ts',
    'test/inspect/**/*.test.ts',
    'test/package/**/*.test.ts',
    'test/permissions/**/*.test.ts',
    'test/production/**/*.test.ts',
    'test/scripts/**/*.test.ts',
    'test/support/**/*.test.ts',
    'test/system/**/*.test.ts',
    'test/tracing/cli-otlp.test.ts',
    'test/tracing/cross-process.test.ts',
    'test/tracing/mcp-spans.test.ts',
    'test/tracing/takeover.test.ts',
    'packages/mcp/test/**/*.test.ts',
    'packages/actors/test/actors/faults.nats.test.ts',
    'packages/actors/test/actors/orphaned.nats.test.ts',
    'packages/actors/test/nats/nats-bus.handover.test.ts',
    'packages/actors/test/store/kv-run-store.test.ts',
    'packages/actors/test/system/takeover.test.ts',
    'packages/actors/test/trust/permissions.test.ts',
    'packages/actors/test/trust/permissions-cli.test.ts',
    'packages/cli/test/commands.test.ts',
    'packages/cli/test/rough-edges.test.ts',
    'packages/core/test/protocol/transcript.nats.test.ts',
    'packages/core/test/store/commit-log.test.ts',
    'packages/core/test/store/file-run-store.test.ts',
  ],
  nats: ['**/*.nats.test.ts', 'packages/actors/test/**/*.test.ts', 'packages/cli/test/**/*.test.ts'],
}

/** The include and exclude globs of each project: a project leaves out what a heavier one takes. */
export function projectGlobs(name: ProjectName): { include: string[]; exclude: string[] } {
  const index = PROJECTS.indexOf(name)
  const heavier = PROJECTS.slice(0, index).flatMap((p) => (p === 'unit' ? [] : PROJECT_GLOBS[p]))
  return { include: name === 'unit' ? TEST_ROOTS : PROJECT_GLOBS[name], exclude: heavier }
}

/** What each project may use, checked at run time by `project-guard.ts`. */
export const ALLOWED: Record<ProjectName, { processes: boolean; nats: boolean }> = {
  browser: { processes: true, nats: true },
  processes: { processes: true, nats: true },
  nats: { processes: false, nats: true },
  unit: { processes: false, nats: false },
}

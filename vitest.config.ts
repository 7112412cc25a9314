import { configDefaults, defineConfig } from 'vitest/config'
import { PROJECTS, projectGlobs } from './test/support/projects.ts'

/**
 * One vitest project per kind of real part the tests need (see test/support/projects.ts): `pnpm
 * test` runs them all, `pnpm test --project unit` (or nats, processes, browser) runs one.
 */
export default defineConfig({
  test: {
    // Hang guards, not measurements: a test waits for readiness, these only stop one that never
    // settles. Projects that start processes get more (a child's start-up scales with the load).
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // NATS- and process-heavy suites share one machine: keep parallelism modest.
    maxWorkers: 2,
    // A worker runs file after file with the modules it has loaded (each file still runs its own
    // top level): about a second of module loading per file otherwise. Shared helpers therefore
    // register their clean-ups through test/support/lifecycle.ts, not at their top level.
    isolate: false,
    reporters: ['default'],
    // The packages' build (what spawned processes load) and the console's page and chart, current
    // before any test uses them.
    globalSetup: ['test/support/build-packages.ts', 'test/support/console-assets.ts'],
    projects: PROJECTS.map((name) => {
      const { include, exclude } = projectGlobs(name)
      const heavy = name === 'processes' || name === 'browser'
      // Hooks in `nats` start servers and 3-node clusters: their start-up grows with the load too.
      return {
        extends: true,
        test: {
          name,
          include,
          exclude: [...configDefaults.exclude, ...exclude],
          env: { SIGNALBOX_TEST_PROJECT: name },
          setupFiles: ['test/support/project-guard.ts', 'test/support/lifecycle-setup.ts'],
          ...(heavy ? { testTimeout: 120_000, hookTimeout: 120_000 } : name === 'nats' ? { hookTimeout: 120_000 } : {}),
        },
      }
    }),
  },
})

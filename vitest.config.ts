import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['packages/*/test/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // NATS- and process-heavy suites share one machine: keep parallelism modest.
    maxWorkers: 2,
    reporters: ['default'],
    // The console's built page and chart, current before any test serves them.
    globalSetup: ['test/support/console-assets.ts'],
  },
})

/**
 * `@signalbox/core/testing/conformance`: the contracts a `Bus` and a `RunStore` must meet, as
 * vitest suites an implementation runs against itself (signalbox runs them against its own). It
 * imports `vitest` (an optional peer dependency): import it from test files only.
 */
export { type BusUnderTest, describeBusConformance, type MakeBus } from './bus.ts'
export { describeRunStoreConformance, errorOf, expectStoreError, type MakeStore, type StoreUnderTest } from './run-store.ts'

import { describeRunStoreConformance } from '@signalbox/core/testing/conformance'
import { MemoryRunStore } from '../../src/store/index.ts'

describeRunStoreConformance('memory', async ({ clock }) => ({ store: new MemoryRunStore({ clock }), cleanup: async () => {} }))

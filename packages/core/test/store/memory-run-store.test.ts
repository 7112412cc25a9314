import { MemoryRunStore } from '../../src/store/index.ts'
import { describeRunStoreConformance } from './conformance.ts'

describeRunStoreConformance('memory', async ({ clock }) => ({ store: new MemoryRunStore({ clock }), cleanup: async () => {} }))

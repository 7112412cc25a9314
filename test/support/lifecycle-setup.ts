/** vitest setup file: runs the helpers' clean-ups (see lifecycle.ts) after each test and each file. */
import { afterAll, afterEach } from 'vitest'
import { everyFile, everyTest } from './lifecycle.ts'

afterEach(async () => {
  for (const cleanUp of everyTest) await cleanUp()
})

afterAll(async () => {
  for (const cleanUp of everyFile) await cleanUp()
})

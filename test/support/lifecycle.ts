/**
 * Clean-ups that shared test helpers need after every test or every test file (close the servers,
 * kill the processes they started). A helper module cannot call vitest's `afterEach` at its top
 * level: the projects run their files in shared workers (`isolate: false`), where a module is
 * evaluated once per worker, so only the first file to import it would get the hook. The setup
 * file `lifecycle-setup.ts` runs these in every file.
 */
type CleanUp = () => unknown

export const everyTest: CleanUp[] = []
export const everyFile: CleanUp[] = []

/** Runs `cleanUp` after each test of every file (register once, at a helper module's top level). */
export function afterEveryTest(cleanUp: CleanUp): void {
  everyTest.push(cleanUp)
}

/** Runs `cleanUp` after each test file (register once, at a helper module's top level). */
export function afterEveryFile(cleanUp: CleanUp): void {
  everyFile.push(cleanUp)
}

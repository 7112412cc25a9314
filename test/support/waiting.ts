/**
 * Waits in the tests have no deadline of their own: a test waits for a readiness signal (a line a
 * child prints, a message, an exit), and its time limit is the only hang guard. A fixed budget per
 * step (20 s for a child to start...) turns a loaded machine into a failure, which is what made
 * such tests flaky. What a stuck test waited for is not lost: `whileWaiting` names the wait, and
 * if the test fails (its time limit included) before the wait ends, the report says what it was.
 */
import { onTestFailed } from 'vitest'

/** Marks a wait as pending; call the returned function when it ends. */
export function whileWaiting(what: () => string): () => void {
  let pending = true
  try {
    onTestFailed(() => {
      if (pending) console.error(`the test was still waiting for ${what()}`)
    })
  } catch {
    // Called outside a test (in a hook): there is no test to report on.
  }
  return () => {
    pending = false
  }
}

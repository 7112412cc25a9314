/**
 * Polls `check` until it returns something truthy, or fails naming `what` (and the last error
 * `check` threw) after `timeoutMs`. For fault tests whose steps each have a window of their own,
 * so that a stall fails the step that waited and says which.
 */
export async function eventually<T>(check: () => T | Promise<T>, timeoutMs: number, what: string): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs
  let last: unknown
  for (;;) {
    try {
      const value = await check()
      if (value) return value as NonNullable<T>
    } catch (error) {
      last = error
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

/**
 * How signalbox writes a duration (a short one never reads as "0s").
 * - `compact` (default), in texts the model and people read about deadlines: `300 ms`, `1.5s`,
 *   `90s`, `2.5 min` (docs/protocol.md §1.8).
 * - `elapsed`, a measured time on a terminal line, to the second: `12 ms`, `1.5 s`, `42 s`, `1 min 5 s`.
 */
export function formatDuration(ms: number, style: 'compact' | 'elapsed' = 'compact'): string {
  if (ms < 1_000) return `${Math.max(0, Math.round(ms))} ms`
  if (style === 'compact') {
    if (ms < 120_000) return `${Number((ms / 1000).toFixed(1))}s`
    return `${Number((ms / 60_000).toFixed(1))} min`
  }
  if (ms < 9_950) return `${(ms / 1000).toFixed(1)} s`
  const seconds = Math.round(ms / 1000)
  if (seconds < 60) return `${seconds} s`
  return `${Math.floor(seconds / 60)} min ${seconds % 60} s`
}

/** `300 ms`, `1.5s`, `5 min`: for messages the model and people read (a short delay must not read as "0s"). */
export function formatDuration(ms: number): string {
  if (ms < 1_000) return `${Math.max(0, Math.round(ms))} ms`
  if (ms < 120_000) return `${Number((ms / 1000).toFixed(1))}s`
  return `${Number((ms / 60_000).toFixed(1))} min`
}

/** The distributed demo's output: one stream per process, each line prefixed with its name. */

/**
 * Splits an output stream into lines with a prefix at the start of each (partial lines are
 * written at once). `promptsEndLines`: a chunk after a partial line (a prompt) starts a new line,
 * because the person's answer, echoed by the terminal, ended it.
 */
export function linePrefixer(
  prefix: string,
  write: (text: string) => void,
  options: { promptsEndLines?: boolean } = {},
): (chunk: string) => void {
  let atLineStart = true
  return (chunk) => {
    if (options.promptsEndLines) atLineStart = true
    let out = ''
    for (const part of chunk.split(/(?<=\n)/)) {
      if (part === '') continue
      if (atLineStart) out += prefix
      out += part
      atLineStart = part.endsWith('\n')
    }
    if (out) write(out)
  }
}

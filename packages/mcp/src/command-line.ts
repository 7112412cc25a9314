import { ConfigError } from '@signalbox/core'

/**
 * Splits a command line the way a POSIX shell would split words (quotes and backslashes; no
 * variables, globs or pipes), so `--mcp "npx server --root '/my dir'"` needs no shell.
 */
export function parseCommandLine(line: string): { command: string; args: string[] } {
  const words: string[] = []
  let word = ''
  let inWord = false
  let quote: '"' | "'" | undefined
  for (let i = 0; i < line.length; i++) {
    const ch = line[i] as string
    if (quote === "'") {
      if (ch === "'") quote = undefined
      else word += ch
    } else if (ch === '\\' && i + 1 < line.length && (quote === undefined || /["\\$`]/.test(line[i + 1] as string))) {
      word += line[++i]
      inWord = true
    } else if (quote === '"') {
      if (ch === '"') quote = undefined
      else word += ch
    } else if (ch === '"' || ch === "'") {
      quote = ch
      inWord = true
    } else if (/\s/.test(ch)) {
      if (inWord) words.push(word)
      word = ''
      inWord = false
    } else {
      word += ch
      inWord = true
    }
  }
  if (quote) throw new ConfigError(`Unterminated ${quote} quote in the command: ${line}`)
  if (inWord) words.push(word)
  const [command, ...args] = words
  if (command === undefined) throw new ConfigError('The MCP server command is empty.')
  return { command, args }
}

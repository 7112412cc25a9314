/** The TypeScript sources of every package (each package's `src`, without `node_modules` or `dist`). */
import { readdirSync } from 'node:fs'
import path from 'node:path'
import { ROOT } from './entry-points.ts'

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const file = path.join(dir, entry.name)
    if (entry.isDirectory()) return entry.name === 'node_modules' || entry.name === 'dist' ? [] : sources(file)
    return entry.name.endsWith('.ts') ? [file] : []
  })
}

export function packageSources(): string[] {
  const packages = path.join(ROOT, 'packages')
  return readdirSync(packages).flatMap((name) => {
    const src = path.join(packages, name, 'src')
    try {
      return sources(src)
    } catch {
      return []
    }
  })
}

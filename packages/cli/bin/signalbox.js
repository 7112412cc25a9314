#!/usr/bin/env node
// The `signalbox` command: registers tsx (the CLI and the modules it loads are TypeScript), then runs it.
import { register } from 'tsx/esm/api'

register()
const { runMain } = await import('../src/main.ts')
await runMain()

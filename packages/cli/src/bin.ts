#!/usr/bin/env node
// The `signalbox` command of the installed package: built JavaScript under plain `node`. A
// TypeScript agent module is loaded through tsx, found when it is needed (see load-module.ts).
import { runMain } from './main.ts'

await runMain()

/** `node --import ./bench/loader/use-dist.mjs`: `@signalbox/*` imports load the built packages (see resolve-hooks.mjs). */
import { register } from 'node:module'

register('./resolve-hooks.mjs', import.meta.url)

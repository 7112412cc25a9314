/**
 * `node --import ./test/support/ts-loader/register.mjs script.ts`: how the suite starts its
 * TypeScript fixtures and examples as processes. It does what `--import tsx` did for them (strip
 * the types of the repository's ESM `.ts` files, source maps on) at about half the start-up CPU:
 * one load hook, esbuild loaded only on a cache miss, and each file's JavaScript kept on disk by
 * content. The suite starts a few hundred such processes. What it leaves out of tsx (CommonJS,
 * `tsconfig` paths, extensionless imports) the repository does not use; user-facing loading (the
 * CLI's `.ts` agent modules) keeps using tsx.
 */
import { register } from 'node:module'

process.setSourceMapsEnabled(true)
register('./hooks.mjs', import.meta.url)

export { IdempotencyCache, type IdempotencyCacheOptions } from './idempotency-cache.ts'
export { KvRunStore, type KvRunStoreOptions } from './kv-run-store.ts'

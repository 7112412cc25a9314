import { fromPublic } from '@nats-io/nkeys'

/** Whether `key` is a public nkey (valid prefix and checksum). */
export function isValidPublicKey(key: unknown): key is string {
  if (typeof key !== 'string') return false
  try {
    fromPublic(key)
    return true
  } catch {
    return false
  }
}

import { createUser, fromPublic } from '@nats-io/nkeys'

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

/** A fresh user nkey seed (`SU...`), as `signalbox keys gen` (or `nk -gen user`) makes it. Keep it secret. */
export function newUserSeed(): string {
  return new TextDecoder().decode(createUser().getSeed())
}

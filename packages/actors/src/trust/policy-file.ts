/**
 * A trust policy as a JSON document (`signalbox run|host --trust FILE`): the fields of
 * `TrustPolicyOptions`, less `ownKey` (the agent's own key comes from its signing key). Unknown
 * fields are refused, so a typo (`"reviewer"`) cannot silently leave a tool approvable by nobody.
 *
 * ```json
 * {
 *   "keys": { "UBI2X2UG7H2CCANNQ3MXU7U7FN4PB5XO4MEJ7POOAXXUJEJAKH3TFLUC": "tina" },
 *   "reviewers": { "drop_claw": ["UBI2X2UG7H2CCANNQ3MXU7U7FN4PB5XO4MEJ7POOAXXUJEJAKH3TFLUC"] },
 *   "steerers": [], "controllers": [], "maxAgeMs": 300000
 * }
 * ```
 */
import { z } from 'zod/v4'
import { createTrustPolicy, type TrustPolicy, TrustPolicyError, type TrustPolicyOptions } from './policy.ts'

const Keys = z.array(z.string())
const TrustPolicyDocument = z.strictObject({
  keys: z.record(z.string(), z.string()),
  reviewers: z.union([Keys, z.record(z.string(), Keys)]).optional(),
  answerers: Keys.optional(),
  steerers: Keys.optional(),
  controllers: Keys.optional(),
  agents: z.record(z.string(), Keys).optional(),
  maxAgeMs: z.number().int().positive().optional(),
})

/**
 * Reads a trust policy document (JSON text). `ownKey`: the agent's own public key, which may never
 * approve or answer for it. Throws `TrustPolicyError` saying what is wrong and where.
 */
export function parseTrustPolicy(text: string, options: { ownKey?: string } = {}): TrustPolicy {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (error) {
    throw new TrustPolicyError(`not JSON (${error instanceof Error ? error.message : String(error)})`)
  }
  const parsed = TrustPolicyDocument.safeParse(json)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    const where = issue && issue.path.length > 0 ? issue.path.map(String).join('.') : 'the document'
    const what =
      issue?.code === 'unrecognized_keys'
        ? `unknown field ${issue.keys.map((k) => JSON.stringify(k)).join(', ')} (fields: keys, reviewers, answerers, steerers, controllers, agents, maxAgeMs)`
        : (issue?.message ?? 'invalid')
    throw new TrustPolicyError(`${where}: ${what}`)
  }
  const document = parsed.data as TrustPolicyOptions
  return createTrustPolicy({ ...document, ...(options.ownKey !== undefined ? { ownKey: options.ownKey } : {}) })
}

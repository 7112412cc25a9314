/** The page's check of edited arguments, against the JSON Schema the agent sends with a request. */
import { tool } from '@signalbox/core'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { argumentChecker, parseOnly } from '../src/page/argument-check.ts'

const Recipient = z.object({ iban: z.string().min(15), name: z.string() })
/** A real tool: its `parameters` are exactly what the machine puts on the approval request. */
const pay = tool({
  name: 'pay',
  description: 'Pay someone.',
  schema: z.object({
    to: Recipient,
    cc: Recipient.optional(),
    amount: z.number().positive(),
    currency: z.enum(['EUR', 'USD']),
    installments: z.number().int().min(1).max(12).optional(),
    tags: z.array(z.string()).max(3).optional(),
  }),
  execute: () => 'paid',
})
const check = argumentChecker(pay.parameters)
const to = { iban: 'DE89370400440532013000', name: 'ACME' }

describe('argumentChecker', () => {
  it('reads the schema a zod tool sends', () => {
    expect(check).toBeTypeOf('function')
  })

  it('accepts a valid edit and returns the value as typed', () => {
    const result = check?.(JSON.stringify({ to, amount: 25, currency: 'EUR' }))
    expect(result).toEqual({ ok: true, value: { to, amount: 25, currency: 'EUR' } })
  })

  it('refuses a wrong type, naming the path', () => {
    const result = check?.(JSON.stringify({ to, amount: '25', currency: 'EUR' }))
    expect(result?.ok).toBe(false)
    expect(result?.ok === false && result.issues).toEqual([expect.stringMatching(/^amount: .*expected number/)])
  })

  it('refuses a missing required key', () => {
    const result = check?.(JSON.stringify({ amount: 25, currency: 'EUR' }))
    expect(result?.ok === false && result.issues).toEqual([expect.stringMatching(/^to: /)])
  })

  it('refuses values outside the bounds, one line per problem', () => {
    const result = check?.(JSON.stringify({ to: { iban: 'short', name: 'x' }, amount: -1, currency: 'GBP', installments: 1.5 }))
    expect(result?.ok === false && result.issues.map((issue) => issue.split(':')[0])).toEqual([
      'to.iban',
      'amount',
      'currency',
      'installments',
    ])
  })

  it('refuses text that is not JSON, and a JSON value that is not an object', () => {
    expect(check?.('{ amount: 25 ')).toMatchObject({ ok: false, issues: [expect.stringMatching(/^not JSON: /)] })
    expect(check?.('[1, 2]')).toMatchObject({ ok: false, issues: [expect.stringMatching(/^\(root\): /)] })
  })

  it('agrees with the agent’s own check on every case', () => {
    const candidates: unknown[] = [
      { to, amount: 25, currency: 'EUR' },
      { to, cc: to, amount: 0.5, currency: 'USD', installments: 12, tags: ['a', 'b'] },
      { to, amount: 0, currency: 'EUR' },
      { to, amount: 25, currency: 'EUR', installments: 13 },
      { to, amount: 25, currency: 'EUR', tags: ['a', 'b', 'c', 'd'] },
      { to: { iban: 'DE89370400440532013000' }, amount: 25, currency: 'EUR' },
      { to, cc: null, amount: 25, currency: 'EUR' },
      null,
      'pay',
    ]
    for (const candidate of candidates) {
      const page = check?.(JSON.stringify(candidate))
      expect(page?.ok, JSON.stringify(candidate)).toBe(pay.validate(candidate).ok)
    }
  })

  it('resolves draft-07 references (a recursive schema)', () => {
    interface Node {
      name: string
      children: Node[]
    }
    const TreeNode: z.ZodType<Node> = z.lazy(() => z.object({ name: z.string(), children: z.array(TreeNode) }))
    const tree = tool({ name: 'tree', description: 'A tree.', schema: z.object({ root: TreeNode }), execute: () => 'ok' })
    const checkTree = argumentChecker(tree.parameters)
    expect(checkTree?.(JSON.stringify({ root: { name: 'a', children: [{ name: 'b', children: [] }] } })).ok).toBe(true)
    expect(checkTree?.(JSON.stringify({ root: { name: 'a', children: [{ name: 7, children: [] }] } })).ok).toBe(false)
  })

  it('leaves the check to the agent when there is no schema, or one zod cannot read', () => {
    expect(argumentChecker(undefined)).toBeUndefined()
    // Written as text: an object literal with a `then` key reads like a promise to linters.
    const conditional = JSON.parse('{ "type": "object", "properties": { "a": { "if": { "type": "string" }, "then": {} } } }')
    expect(argumentChecker(conditional)).toBeUndefined()
  })
})

describe('parseOnly', () => {
  it('checks JSON syntax only', () => {
    expect(parseOnly('{"anything": [1]}')).toEqual({ ok: true, value: { anything: [1] } })
    expect(parseOnly('{')).toMatchObject({ ok: false })
  })
})

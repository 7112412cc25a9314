import { describe, expect, it } from 'vitest'
import { type CallFacts, routeCall } from '../../src/machine/routing.ts'

const plain: CallFacts = { handedOver: false, steered: false, invalid: false, hook: false, needsApproval: undefined }

describe('routeCall', () => {
  it('runs a valid call that nothing stands in front of', () => {
    expect(routeCall(plain)).toBe('run')
    expect(routeCall({ ...plain, needsApproval: false })).toBe('run')
  })

  it('asks a person when the tool always needs approval, its rule when it has one', () => {
    expect(routeCall({ ...plain, needsApproval: true })).toBe('approval')
    expect(routeCall({ ...plain, needsApproval: () => true })).toBe('approval-rule')
  })

  it('lets the hooks decide before a person is asked', () => {
    expect(routeCall({ ...plain, hook: true, needsApproval: true })).toBe('hook')
  })

  it('never shows an invalid call to a hook or a person', () => {
    expect(routeCall({ ...plain, invalid: true, hook: true, needsApproval: true })).toBe('invalid')
  })

  it('lets a correction beat the call, and a hand-off beat everything', () => {
    expect(routeCall({ ...plain, steered: true, invalid: true, hook: true })).toBe('steered')
    expect(routeCall({ handedOver: true, steered: true, invalid: true, hook: true, needsApproval: true })).toBe('handed-over')
  })
})

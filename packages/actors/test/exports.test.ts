import * as root from '@signalbox/actors'
import * as inspect from '@signalbox/actors/inspect'
import * as nats from '@signalbox/actors/nats'
import * as store from '@signalbox/actors/store'
import * as system from '@signalbox/actors/system'
import * as trust from '@signalbox/actors/trust'
import { ErrorCode, SignalboxError } from '@signalbox/core'
import { describe, expect, it } from 'vitest'
import manifest from '../package.json' with { type: 'json' }

// The public API is a contract: adding or removing a name here is a decision, not an accident.
describe('@signalbox/actors public surface', () => {
  it('has exactly these entry points', () => {
    expect(Object.keys(manifest.exports).sort()).toEqual([
      '.',
      './inspect',
      './internal',
      './nats',
      './store',
      './system',
      './trust',
    ])
  })

  it('root: the participants of a distributed run', () => {
    expect(Object.keys(root).sort()).toEqual([
      'ApprovalInvalidError',
      'ApprovalRequiredError',
      'RequestWithdrawnError',
      'busAuditLog',
      'connectAgent',
      'discoverTools',
      'readAudit',
      'remoteAnswerer',
      'remoteReviewer',
      'remoteTool',
      'sendControl',
      'sendSteering',
      'serveAnswerer',
      'serveReviewer',
      'serveTools',
      'watchEvents',
      'withdrawalOf',
    ])
  })

  it('/nats: the NATS transport', () => {
    expect(Object.keys(nats).sort()).toEqual([
      'NatsBus',
      'NatsConnectError',
      'NatsCredentialsError',
      'connectNatsBus',
      'defaultStreamName',
      'mergeCredentials',
      'natsCredentialsFromEnv',
      'redactUrlSecrets',
    ])
  })

  it('/system: agent systems', () => {
    expect(Object.keys(system).sort()).toEqual([
      'AgentSystem',
      'ChildRunError',
      'KvDirectory',
      'MemoryDirectory',
      'RunTakeover',
      'createAgentSystem',
      'delegateTool',
      'derivedRunId',
      'fanOut',
      'fanOutTool',
      'handoffFilters',
      'handoffTool',
    ])
  })

  it('/store: the JetStream run store and the tool host idempotency cache', () => {
    expect(Object.keys(store).sort()).toEqual(['IdempotencyCache', 'KvRunStore'])
  })

  it('/trust: signing, trust policies, audit verification and least-privilege permissions', () => {
    expect(Object.keys(trust).sort()).toEqual(TRUST_NAMES)
  })

  it('/inspect: the inspector bridge and live views', () => {
    expect(Object.keys(inspect).sort()).toEqual([
      'INSPECTOR_EVENT_TYPES',
      'STATELY_INSPECTOR_URL',
      'createBusInspector',
      'createInspectionConverter',
      'createLocalInspector',
      'createStatelyInspector',
      'inspectReviewer',
      'inspectTool',
      'inspectToolHost',
      'isInspectorWireEvent',
      'startBridgeServer',
      'startInspectionRelay',
      'statechartToMermaid',
    ])
  })

  it('every error class it exports is a SignalboxError (is() works across copies of the package)', () => {
    const errors = Object.entries({ ...root, ...nats, ...system, ...inspect, ...trust, ...store }).filter(
      ([name, value]) => typeof value === 'function' && name.endsWith('Error'),
    )
    expect(errors.map(([name]) => name).sort()).toEqual([
      'ApprovalInvalidError',
      'ApprovalRequiredError',
      'ChildRunError',
      'NatsConnectError',
      'NatsCredentialsError',
      'PermissionScopeError',
      'RequestWithdrawnError',
      'SigningKeyError',
      'TrustPolicyError',
    ])
    for (const [name, value] of errors) {
      expect((value as { prototype: unknown }).prototype, name).toBeInstanceOf(SignalboxError)
      expect((value as { is: unknown }).is, name).toBe(SignalboxError.is)
    }
    expect(() => trust.rolePermissions('nobody' as trust.Role)).toThrow(
      expect.objectContaining({ code: ErrorCode.PERMISSION_SCOPE_INVALID, fault: 'user' }),
    )
  })

  it('keeps its request plumbing and the core bus out of every entry point', () => {
    for (const [name, entry] of Object.entries({ root, nats, system, inspect })) {
      const names = Object.keys(entry)
      for (const internal of ['msgIdPart', 'createRejectionReporter', 'durableRequest', 'createInProcessBus', 'createAgent']) {
        expect(names, `${name} exports ${internal}`).not.toContain(internal)
      }
    }
  })
})

const TRUST_NAMES = [
  'PermissionScopeError',
  'ROLES',
  'SIGNATURE_DOMAIN',
  'SIGNED_FIELDS',
  'SigningKeyError',
  'TrustPolicyError',
  'agentKeysPolicy',
  'authorizationBlock',
  'createEvidenceBook',
  'createSigner',
  'createTrustPolicy',
  'isValidPublicKey',
  'newUserSeed',
  'parseTrustPolicy',
  'rolePermissions',
  'signAuditEntry',
  'signedAuditLog',
  'signingInput',
  'userEntry',
  'verifyAuditEntry',
  'verifyAuditTrail',
  'verifySignature',
]

import { describe, expect, it } from 'vitest'
import manifest from '../package.json' with { type: 'json' }
import * as aiSdk from '../src/index.ts'

// The public API is a contract: adding or removing a name here is a decision, not an accident.
describe('@signalbox/ai-sdk public surface', () => {
  it('has one entry point and names its exports', () => {
    expect(Object.keys(manifest.exports)).toEqual(['.'])
    expect(Object.keys(aiSdk).sort()).toEqual(['AiSdkProvider'])
  })

  it('brings no AI SDK of its own: the provider spec is a peer, `ai` an optional one', () => {
    // @types/json-schema: the types @ai-sdk/provider's declarations import without depending on them.
    expect(Object.keys(manifest.dependencies)).toEqual(['@signalbox/core', '@types/json-schema'])
    expect(manifest.peerDependencies).toEqual({ '@ai-sdk/provider': '^3.0.0', ai: '^6.0.0' })
    expect(manifest.peerDependenciesMeta).toEqual({ ai: { optional: true } })
  })
})

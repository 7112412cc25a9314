import * as cli from '@signalbox/cli'
import { describe, expect, it } from 'vitest'
import manifest from '../package.json' with { type: 'json' }

// The public API is a contract: adding or removing a name here is a decision, not an accident.
describe('@signalbox/cli public surface', () => {
  it('has one public entry point (and the unstable /internal) and the signalbox command', () => {
    expect(Object.keys(manifest.exports)).toEqual(['.', './internal'])
    expect(Object.keys(manifest.bin)).toEqual(['signalbox'])
  })

  it('exports the agent-module contract of `signalbox run`, and no command internals', () => {
    expect(Object.keys(cli).sort()).toEqual(['EXIT', 'agentModuleProblems', 'commandHelp', 'defineAgentModule'])
    for (const internal of ['runMain', 'loadAgentModule', 'openBus', 'importUserModule'])
      expect(Object.keys(cli)).not.toContain(internal)
  })
})

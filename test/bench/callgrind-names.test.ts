/**
 * `bench/callgrind-names.ts` reads a kept callgrind file with V8's map of compiled code: a small
 * file in callgrind's compressed format (names given once, then by id) stands for one here.
 */
import { describe, expect, it } from 'vitest'
import { codeMap, readCallgrind, UNATTRIBUTED } from '../../bench/lib/callgrind-names.ts'

// Two compiled functions; xstate's `microstep` was compiled twice (the later code at 0x3000).
const map = [
  '1000 100 JS:*startWork file:///x/packages/core/dist/machine/agent-machine.js:38:20',
  '2000 100 JS:^microstep /x/node_modules/xstate/dist/raise.cjs.js:2150:19',
  '3000 80 JS:*microstep /x/node_modules/xstate/dist/raise.cjs.js:2150:19',
].join('\n')

// microstep (JIT, 0x3010) runs 50 of its own and calls Builtins_ObjectAssign (cost 40 in all);
// startWork (0x1020) runs 10 and calls Builtins_ObjectAssign (cost 10); the builtin's own code
// is 30, of which it spends 20 in the runtime (a C++ function, 20 of its own). A root runs 7.
const file = `# callgrind format
events: Ir
fn=(1) 0x0000000000003010
5 50
cfn=(2) Builtins_ObjectAssign
calls=1 0
6 40
fn=(3) 0x0000000000001020
7 10
cfn=(2)
calls=1 0
8 10
fn=(2)
9 30
cfn=(4) v8::internal::Runtime_SetProperty
calls=2 0
9 20
fn=(4)
3 20
fn=(5) uv_run
1 7
`

describe('bench/callgrind-names: a callgrind file, the JIT frames named', () => {
  const costs = readCallgrind(file, codeMap(map))

  it('names a JIT address by the latest code that holds it, and keeps other names', () => {
    const name = codeMap(map)
    expect(name('0x0000000000003010')).toBe('microstep /x/node_modules/xstate/dist/raise.cjs.js:2150:19')
    expect(name('0x0000000000001020')).toBe('startWork file:///x/packages/core/dist/machine/agent-machine.js:38:20')
    expect(name('0x0000000000009000')).toBe('0x0000000000009000')
    expect(name('Builtins_ObjectAssign')).toBe('Builtins_ObjectAssign')
  })

  it("counts each function's own code, not its calls", () => {
    expect(Object.fromEntries(costs.self)).toEqual({
      'microstep /x/node_modules/xstate/dist/raise.cjs.js:2150:19': 50,
      'startWork file:///x/packages/core/dist/machine/agent-machine.js:38:20': 10,
      Builtins_ObjectAssign: 30,
      'v8::internal::Runtime_SetProperty': 20,
      uv_run: 7,
    })
  })

  it('sums the calls into a function by caller (inclusive)', () => {
    expect(Object.fromEntries(costs.callersOf('Builtins_Object'))).toEqual({
      'microstep /x/node_modules/xstate/dist/raise.cjs.js:2150:19': 40,
      'startWork file:///x/packages/core/dist/machine/agent-machine.js:38:20': 10,
    })
  })

  it("charges one function's own cost to the JavaScript functions that caused it", () => {
    // The runtime's 20, reached only through the builtin, split 40:10.
    expect(Object.fromEntries(costs.causesOf('v8::internal::Runtime_'))).toEqual({
      'microstep /x/node_modules/xstate/dist/raise.cjs.js:2150:19': 16,
      'startWork file:///x/packages/core/dist/machine/agent-machine.js:38:20': 4,
    })
  })

  it('charges builtins and runtime to the JavaScript that called them, in proportion; a root to no one', () => {
    // The builtin's 30 and the runtime's 20 split 40:10 between xstate and signalbox.
    expect(Object.fromEntries(costs.byCause())).toEqual({
      xstate: 50 + 0.8 * 50,
      signalbox: 10 + 0.2 * 50,
      [UNATTRIBUTED]: 7,
    })
  })
})

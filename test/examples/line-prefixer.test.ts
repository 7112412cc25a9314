/** The distributed demo's line prefixer: every line of a process's output carries its name. */
import { linePrefixer } from '@signalbox/examples/shared/line-prefixer.ts'
import { describe, expect, it } from 'vitest'

describe('linePrefixer', () => {
  it('prefixes every line of a stream, partial lines included', () => {
    let out = ''
    const write = linePrefixer('a │ ', (text) => {
      out += text
    })
    write('one\ntw')
    write('o\n')
    write('three')
    expect(out).toBe('a │ one\na │ two\na │ three')
    let prompted = ''
    const prompt = linePrefixer(
      'r │ ',
      (text) => {
        prompted += text
      },
      { promptsEndLines: true },
    )
    prompt('Approve? [y/n] ')
    prompt('✔ approved\n')
    expect(prompted).toBe('r │ Approve? [y/n] r │ ✔ approved\n')
  })
})

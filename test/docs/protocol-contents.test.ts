/**
 * docs/protocol.md is read by people writing an actor in another language: its table of contents
 * lists every section and sub-section, and the normative sections come before the worked example
 * and the checklists (appendices).
 */
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'

const doc = readFileSync(path.join(import.meta.dirname, '..', '..', 'docs', 'protocol.md'), 'utf8')
const contents = doc.slice(doc.indexOf('\nContents\n'), doc.indexOf('\n---\n'))
const body = doc.slice(doc.indexOf('\n---\n'))
const headings = [...body.matchAll(/^(##|###) (.+)$/gm)].map((m) => m[2] as string)

/** GitHub's anchor for a heading. */
const anchor = (title: string) =>
  title
    .toLowerCase()
    .replace(/[^\w\- ]/g, '')
    .replace(/ /g, '-')

describe('docs/protocol.md', () => {
  it('lists every section and sub-section in its contents, in order, with working anchors', () => {
    const listed = [...contents.matchAll(/\[([^\]]+)\]\(#([^)]+)\)/g)].map((m) => [m[1], m[2]])
    expect(listed).toEqual(headings.map((title) => [title, anchor(title)]))
  })

  it('puts the normative sections first and the worked example and checklists after them', () => {
    const top = [...body.matchAll(/^## (.+)$/gm)].map((m) => m[1] as string)
    const firstAppendix = top.findIndex((title) => title.startsWith('Appendix'))
    expect(firstAppendix).toBeGreaterThan(0)
    expect(top.slice(firstAppendix).every((title) => title.startsWith('Appendix'))).toBe(true)
    expect(top.slice(0, firstAppendix).map((title) => Number(title.split('.')[0]))).toEqual(
      top.slice(0, firstAppendix).map((_, index) => index + 1),
    )
    expect(top.slice(firstAppendix).map((title) => title.replace(/^Appendix \w\. /, ''))).toEqual([
      'Worked example: a foreign reviewer over a raw socket',
      'Checklists for implementers',
    ])
  })

  it('says which of its words are normative (RFC 2119)', () => {
    expect(doc).toContain('MUST, MUST NOT, SHOULD, SHOULD NOT and MAY are used as in RFC 2119')
    expect(body.match(/\bMUST\b/g)?.length).toBeGreaterThan(20)
  })
})

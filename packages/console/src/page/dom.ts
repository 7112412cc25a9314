/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
/** Tiny DOM helpers. Text from the bus only ever goes in as `textContent`, never as HTML. */

type Child = Node | string | null | undefined | false

export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Record<string, string> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag)
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, value)
  for (const child of children) if (child) element.append(child)
  return element
}

const SVG = 'http://www.w3.org/2000/svg'

export function svg(tag: string, attributes: Record<string, string | number> = {}, ...children: Child[]): SVGElement {
  const element = document.createElementNS(SVG, tag)
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, String(value))
  for (const child of children) if (child) element.append(child)
  return element
}

export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const element = document.getElementById(id)
  if (!element) throw new Error(`#${id} is missing from the page`)
  return element as T
}

export function clockTime(epochMs: number): string {
  return new Date(epochMs).toLocaleTimeString([], { hour12: false })
}

/** Pretty JSON that never throws (cycles cannot arrive as JSON, but be safe). */
export function pretty(value: unknown): string {
  try {
    return JSON.stringify(value, null, 2) ?? 'undefined'
  } catch {
    return String(value)
  }
}

export function shortId(id: string): string {
  return id.length > 14 ? `${id.slice(0, 12)}…` : id
}

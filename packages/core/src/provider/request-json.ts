/**
 * A chat-completions request body as JSON text, the transcript's frozen prefix taken from the
 * run's previous body rather than serialized again.
 *
 * A run sends its whole transcript on every model call, so a 200-step run serializes its first
 * message 200 times: on a long run JSON is a quarter of what a step costs the client. Transcript
 * messages are frozen once they are in (`deepFreeze`: events and hooks share them) and only ever
 * appended, so the text of the previous body up to its last frozen message is still right while
 * the same messages lead, and only what was appended since is serialized. Kept under the run's
 * key (`ProviderCallOptions.run`), so it goes with the run: the previous body (which the model
 * call in flight holds anyway), its messages and where its frozen prefix ends. A message that is
 * not frozen (a hook's rewrite) is serialized on every call, and so is everything after it.
 */
interface Previous {
  messages: readonly unknown[]
  body: string
  /** How many leading messages were frozen, and where their text ends in `body`. */
  frozen: number
  end: number
}

const previous = new WeakMap<object, Previous>()

const HEAD = '{"messages":['

/**
 * The same JSON as `JSON.stringify({ ...fields, messages })`, up to the order of the keys
 * (`messages` first): a `messages` in `fields` is left out, as the spread would override it.
 * With `run`, what this run sent last is reused where it still holds; without, nothing is kept.
 */
export function requestJson(messages: readonly unknown[], fields: Record<string, unknown>, run?: object): string {
  const rest = JSON.stringify('messages' in fields ? { ...fields, messages: undefined } : fields)
  const tail = rest === '{}' ? ']}' : `],${rest.slice(1)}`
  const before = run === undefined ? undefined : previous.get(run)
  // The previous body's frozen prefix holds while the same messages lead.
  let reused = 0
  if (before !== undefined && before.frozen <= messages.length) {
    while (reused < before.frozen && before.messages[reused] === messages[reused]) reused++
    if (reused < before.frozen) reused = 0
  }
  // One join, so the body is one flat string: the call in flight holds it, and nothing else of ours.
  const parts: string[] = [reused > 0 ? (before as Previous).body.slice(0, (before as Previous).end) : HEAD]
  let frozen = reused
  let end = reused > 0 ? (before as Previous).end : HEAD.length
  for (let i = reused; i < messages.length; i++) {
    const message = messages[i]
    const json = (i > 0 ? ',' : '') + (JSON.stringify(message) ?? 'null')
    parts.push(json)
    if (frozen === i && typeof message === 'object' && message !== null && Object.isFrozen(message)) {
      frozen++
      end += json.length
    }
  }
  parts.push(tail)
  const body = parts.join('')
  if (run !== undefined) previous.set(run, { messages, body, frozen, end })
  return body
}

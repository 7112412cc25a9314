/**
 * A reviewer service that takes every approval request and never decides: what a reviewer
 * process holds when it is killed. Prints `held <n>` as requests come in. Started by the pick-up
 * bench as one process (`node --import tsx`), and killed with SIGKILL by pid.
 * Arguments: <nats url> <prefix>.
 */

import { serveReviewer } from '@signalbox/actors'
import { connectNatsBus } from '@signalbox/actors/nats'
import { createSubjects } from '@signalbox/core/bus'

const [url, prefix] = process.argv.slice(2) as [string, string]
const bus = await connectNatsBus({ servers: url, prefix, name: `holding-reviewer-${process.pid}` })
let held = 0
const service = serveReviewer({
  bus,
  subjects: createSubjects(prefix),
  // A person who is still thinking: resolves only when the service stops.
  reviewer: {
    review: (_request, { signal }) => new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason))),
  },
  onRequest: () => {
    held++
    process.stdout.write(`held ${held}\n`)
  },
})
await service.ready
process.stdout.write('ready\n')

/**
 * Inspection across processes: each runtime publishes its converted inspection events on
 * `<prefix>.inspect.<runtimeId>` (plain publish: lossy, cheap, never in the agent's way);
 * `startInspectionRelay` / `signalbox inspect` gathers every runtime into one Stately inspector.
 */
import { type Bus, createSubjects, type Subjects } from '@signalbox/core/bus'
import { createStatelyInspector, defaultRuntimeId, type Inspector, type InspectorOptions } from './inspector.ts'

export interface BusInspectorOptions extends InspectorOptions {
  bus: Bus
  subjects?: Subjects
}

export interface BusInspector extends Inspector {
  /** `<prefix>.inspect.<runtimeId>` */
  readonly subject: string
  /** Events handed to the bus. */
  readonly published: number
  /** Events not sent: larger than the bus's `maxPayload`, or the publish failed (bus closed). */
  readonly dropped: number
}

export function createBusInspector(options: BusInspectorOptions): BusInspector {
  const { bus } = options
  const subjects = options.subjects ?? createSubjects()
  const runtimeId = options.runtimeId ?? defaultRuntimeId()
  const subject = subjects.inspect(runtimeId)
  let published = 0
  let dropped = 0
  const inspector = createStatelyInspector({
    ...options,
    runtimeId,
    send(event) {
      const data = Buffer.from(JSON.stringify(event), 'utf8')
      if (data.byteLength > bus.maxPayload) {
        // Inspection is best effort: an oversized event (contents opted in, a long transcript) is skipped.
        dropped++
        return
      }
      try {
        bus.publish(subject, data)
        published++
      } catch (error) {
        dropped++
        options.onError?.(error)
      }
    },
  })
  return {
    ...inspector,
    subject,
    get published() {
      return published
    },
    get dropped() {
      return dropped
    },
  }
}

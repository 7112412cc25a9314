import {
  type Bus,
  type Clock,
  createSubjects,
  encodeMessage,
  PROTOCOL_VERSION,
  payloadSample,
  type RejectionMessage,
  type SignalboxError,
  type Subjects,
  systemClock,
} from '@signalbox/core'

export interface RejectionReporter {
  /** Records a message that was refused and had nobody to reply to. Never throws. */
  (subject: string, data: Uint8Array | string, error: SignalboxError): void
}

/**
 * Bad input on a publish-only subject has no reply subject: it is published as a `rejection`
 * on `<prefix>.errors.<component>` so an operator (and tests) can see it, and the actor goes on.
 */
export function createRejectionReporter(options: {
  bus: Bus
  component: string
  subjects?: Subjects
  clock?: Clock
  onRejected?: (rejection: RejectionMessage) => void
}): RejectionReporter {
  const subjects = options.subjects ?? createSubjects()
  const clock = options.clock ?? systemClock
  const subject = subjects.errors(options.component)
  return (rejectedSubject, data, error) => {
    const message: RejectionMessage = {
      v: PROTOCOL_VERSION,
      type: 'rejection',
      component: options.component,
      subject: rejectedSubject,
      error: { code: error.code, message: error.message },
      sample: payloadSample(data),
      at: clock.now(),
    }
    options.onRejected?.(message)
    try {
      options.bus.publish(subject, encodeMessage(message))
    } catch {
      // A closed or reconnecting bus: the rejection is informational only.
    }
  }
}

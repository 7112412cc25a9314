import { SignalboxError } from '@signalbox/core'

/** A child could not start or ended badly; `fault` tells whether to retry. */
export class ChildRunError extends SignalboxError {
  constructor(code: string, message: string, details?: Record<string, unknown>) {
    super(code, message, { fault: 'runtime', ...(details ? { details } : {}) })
  }
}

/** The few members of `ws` (a dependency of this workspace, shipped without types) the inspect tests use. */
declare module 'ws' {
  import { EventEmitter } from 'node:events'

  export default class WebSocket extends EventEmitter {
    static readonly OPEN: number
    constructor(url: string)
    readonly readyState: number
    send(data: string): void
    close(): void
    terminate(): void
    on(event: 'message', listener: (data: Buffer) => void): this
    on(event: 'open' | 'close', listener: () => void): this
    on(event: 'error', listener: (error: Error) => void): this
    once(event: 'open' | 'close', listener: () => void): this
    once(event: 'error', listener: (error: Error) => void): this
  }
}

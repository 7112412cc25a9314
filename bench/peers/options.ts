export interface PeerOptions {
  /** The scripted model server's `baseURL` (`http://host:port/v1`). */
  url: string
  model: string
  apiKey: string
  /** Tool steps the server asks for before it answers: each run is checked against it. */
  steps: number
}

/** One run to the final answer; resolves to the tool steps it executed (checked). */
export type PeerRun = () => Promise<number>

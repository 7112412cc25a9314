/**
 * `@statelyai/inspect`, an optional peer dependency: only the Stately views (the bridge server,
 * the local inspector, the relay) need it, so it is loaded when one starts, and its absence is a
 * `INSPECTOR_UNAVAILABLE` error that says what to install rather than a failed import of the
 * whole `@signalbox/actors/inspect` entry point (whose converter and Mermaid output work without it).
 */
import { SignalboxError } from '@signalbox/core'

/** The peer dependency and the range `@signalbox/actors` declares for it. */
export const STATELY_INSPECT_PEER = { name: '@statelyai/inspect', range: '^0.7.2' } as const

type StatelyClient = typeof import('@statelyai/inspect')
type StatelyServer = typeof import('@statelyai/inspect/server')

let client: Promise<StatelyClient> | undefined
let server: Promise<StatelyServer> | undefined

/** `@statelyai/inspect` (its WebSocket inspector). */
export function loadStatelyClient(): Promise<StatelyClient> {
  client ??= importOptionalPeer<StatelyClient>('@statelyai/inspect').catch((error) => {
    client = undefined
    throw error
  })
  return client
}

/** `@statelyai/inspect/server` (its bridge page and WebSocket server). */
export function loadStatelyServer(): Promise<StatelyServer> {
  server ??= importOptionalPeer<StatelyServer>('@statelyai/inspect/server').catch((error) => {
    server = undefined
    throw error
  })
  return server
}

/**
 * Imports `specifier`, a module of the optional peer package `peer`. A missing peer becomes
 * `INSPECTOR_UNAVAILABLE` naming the package and range to install; any other failure is passed on.
 */
export async function importOptionalPeer<T>(
  specifier: string,
  peer: { name: string; range: string } = STATELY_INSPECT_PEER,
): Promise<T> {
  try {
    return (await import(specifier)) as T
  } catch (error) {
    if (isMissingPackage(error, peer.name)) {
      throw new SignalboxError(
        'INSPECTOR_UNAVAILABLE',
        `The Stately inspector needs the optional peer dependency ${peer.name}, which is not installed: ` +
          `npm install ${peer.name}@"${peer.range}"`,
        { fault: 'user', cause: error, details: { package: peer.name } },
      )
    }
    throw error
  }
}

function isMissingPackage(error: unknown, name: string): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown }
  // Node names the package ('@statelyai/inspect'); Vite's loader, the specifier ('…/server').
  return (
    code === 'ERR_MODULE_NOT_FOUND' &&
    typeof message === 'string' &&
    (message.includes(`'${name}'`) || message.includes(`'${name}/`))
  )
}

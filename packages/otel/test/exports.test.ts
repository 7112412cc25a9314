import { describe, expect, it } from 'vitest'
import * as otel from '../src/index.ts'

describe('@signalbox/otel exports', () => {
  it('names its public surface', () => {
    expect(Object.keys(otel).sort()).toEqual([
      'ERROR_TYPE',
      'GenAI',
      'Mcp',
      'Metric',
      'Operation',
      'Server',
      'Signalbox',
      'TRACED_EVENT_TYPES',
      'TRACEPARENT',
      'TRACER_NAME',
      'TRACESTATE',
      'UNKNOWN_PROVIDER',
      'W3CTraceContext',
      'isMeterProviderRegistered',
      'isTracerProviderRegistered',
      'parseTraceparent',
      'traceAgent',
      'traceAnswerer',
      'traceMcp',
      'traceReviewer',
      'traceTools',
      'withRunAttributes',
      'withTraceContext',
    ])
  })

  it('needs no SDK: only @opentelemetry/api and @signalbox/core', async () => {
    const { readFile } = await import('node:fs/promises')
    const pkg = JSON.parse(await readFile(new URL('../package.json', import.meta.url), 'utf8')) as {
      dependencies?: Record<string, string>
      peerDependencies?: Record<string, string>
    }
    expect(Object.keys({ ...pkg.dependencies, ...pkg.peerDependencies }).sort()).toEqual([
      '@opentelemetry/api',
      '@signalbox/core',
    ])
  })
})

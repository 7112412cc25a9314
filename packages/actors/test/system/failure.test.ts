/**
 * What a supervisor does when a child fails: report it to the model (default), retry with
 * backoff, or give up (the parent fails too). A failing child fails nothing else.
 */

import { delegateTool, fanOutTool } from '@signalbox/actors/system'
import { RunFailedError, tool } from '@signalbox/core'
import type { RecordedRequest } from '@signalbox/core/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { afterToolResult, agent, answer, call, ofType, TOPOLOGIES, taskOf, topology } from './harness.ts'

const BROKEN = { error: { status: 400, message: 'model "tiny" does not support tools' } }

describe.each(TOPOLOGIES)('child failures (%s)', (name) => {
  it('report: the model reads the child’s error as the tool result and decides', async () => {
    const t = await topology(name)
    const parent = agent({
      id: 'parent',
      tools: [delegateTool(t.parent, 'child')],
      script: [
        call('ask_child', { task: 'Look it up.' }),
        answer('The helper is down; here is what I know.', { expect: afterToolResult('does not support tools') }),
      ],
    })
    const child = agent({ id: 'child', script: [BROKEN] })
    t.parent.add(parent.agent)
    t.child.add(child.agent)
    await t.start()
    const result = await t.parent.run('parent', 'Find out.')
    expect(result.output).toBe('The helper is down; here is what I know.')
    const read = ofType(parent.events, 'tool.end')[0]
    expect(read).toMatchObject({ toolName: 'ask_child', isError: true, outcome: 'failed' })
    expect(read?.output).toMatch(/^Error: The "child" agent failed \(PROVIDER_ERROR\): .*does not support tools/)
    expect(ofType(child.events, 'run.end')[0]).toMatchObject({ status: 'failed' })
  })

  it('retry: a failed child is tried again after an exponential backoff, and its answer is used', async () => {
    const t = await topology(name)
    const parent = agent({
      id: 'parent',
      tools: [delegateTool(t.parent, 'child', { failure: { onFailure: 'retry', retries: 3, backoffMs: 60 } })],
      script: [
        call('ask_child', { task: 'Try hard.' }),
        answer('Got it on the third try.', { expect: afterToolResult('third time lucky') }),
      ],
    })
    const child = agent({ id: 'child', script: [BROKEN, BROKEN, answer('third time lucky')] })
    t.parent.add(parent.agent)
    t.child.add(child.agent)
    await t.start()
    const result = await t.parent.run('parent', 'Go.')
    expect(result.output).toBe('Got it on the third try.')
    const starts = ofType(child.events, 'run.start').map((e) => e.at)
    const ends = ofType(child.events, 'run.end').map((e) => e.at)
    expect(ofType(child.events, 'run.end').map((e) => e.status)).toEqual(['failed', 'failed', 'done'])
    // Backoff 60 ms, then 120 ms, between one attempt's end and the next one's start.
    expect((starts[1] as number) - (ends[0] as number)).toBeGreaterThanOrEqual(55)
    expect((starts[2] as number) - (ends[1] as number)).toBeGreaterThanOrEqual(115)
    // Every attempt is a child of the same parent run.
    for (const start of ofType(child.events, 'run.start')) expect(start.parentRunId).toBe(result.runId)
  })

  it('give-up: the parent run fails with the child’s error; its model is not asked again', async () => {
    const t = await topology(name)
    const parent = agent({
      id: 'parent',
      tools: [delegateTool(t.parent, 'child', { failure: { onFailure: 'give-up' } })],
      script: [call('ask_child', { task: 'Must work.' })],
    })
    const child = agent({ id: 'child', script: [BROKEN] })
    t.parent.add(parent.agent)
    t.child.add(child.agent)
    await t.start()
    const failure = await t.parent.run('parent', 'Go.').catch((error: unknown) => error)
    expect(failure).toBeInstanceOf(RunFailedError)
    const { result } = failure as RunFailedError
    expect(result.status).toBe('failed')
    expect(result.stopReason).toBe('tool_fatal')
    expect(result.error?.code).toBe('PROVIDER_ERROR')
    expect(result.error?.message).toContain('The "child" agent failed')
    expect(parent.provider.requests).toHaveLength(1)
  })

  it('a failing child fails nothing else: its siblings finish, the parent answers, the host goes on', async () => {
    const t = await topology(name)
    const lookups: string[] = []
    const lookup = tool({
      name: 'lookup',
      description: 'Looks a city up.',
      schema: z.object({ city: z.string() }),
      execute: ({ city }) => {
        lookups.push(city)
        return `${city}: sunny`
      },
    })
    const parent = agent({
      id: 'parent',
      tools: [fanOutTool(t.parent, 'weather')],
      script: [
        call('ask_weather_each', { tasks: ['Rosario', 'Atlantis', 'Tandil'] }),
        answer('Two of three.', {
          expect: afterToolResult(
            '1. Rosario: sunny\n2. Error (PROVIDER_ERROR): The model has no map of Atlantis\n3. Tandil: sunny',
          ),
        }),
      ],
    })
    const weather = agent({
      id: 'weather',
      tools: [lookup],
      script: (request: RecordedRequest) => {
        const city = taskOf(request)
        if (city === 'Atlantis') return { error: { status: 400, message: 'The model has no map of Atlantis' } }
        const last = request.messages.at(-1)
        return last?.role === 'tool' ? { content: last.content } : { toolCalls: [{ name: 'lookup', arguments: { city } }] }
      },
    })
    t.parent.add(parent.agent)
    t.child.add(weather.agent)
    await t.start()
    const result = await t.parent.run('parent', 'Weather, please.')
    expect(result.output).toBe('Two of three.')
    expect(lookups.sort()).toEqual(['Rosario', 'Tandil'])
    expect(
      ofType(weather.events, 'run.end')
        .map((e) => e.status)
        .sort(),
    ).toEqual(['done', 'done', 'failed'])
    // The same agent (and host) still serves the next run.
    const again = await t.parent.run('weather', 'Tandil')
    expect(again.output).toBe('Tandil: sunny')
  })
})

import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createCallPreparer, openCall, validateCall } from '../../src/machine/prepare-call.ts'
import type { ToolCall } from '../../src/messages.ts'
import { type Tool, tool } from '../../src/tool.ts'

const book = tool({
  name: 'book_ticket',
  description: 'Book one seat.',
  schema: z.object({ train: z.number().int() }),
  execute: () => 'booked',
})
const tools = new Map<string, Tool<unknown>>([['book_ticket', book as Tool<unknown>]])
const call = (name: string, args: string): ToolCall => ({ id: 'call-1', type: 'function', function: { name, arguments: args } })

describe('validateCall', () => {
  it('parses and validates the arguments the tool will get', () => {
    expect(validateCall(call('book_ticket', '{"train": 42}'), tools)).toEqual({ args: { train: 42 }, invalid: undefined })
  })

  it('treats empty arguments as an empty object', () => {
    const prepared = validateCall(call('book_ticket', '  '), tools)
    expect(prepared.args).toEqual({})
    expect(prepared.invalid?.outcome).toBe('invalid_arguments')
  })

  it('names the available tools when the model asks for an unknown one', () => {
    expect(validateCall(call('cancel_ticket', '{}'), tools)).toEqual({
      args: undefined,
      invalid: { outcome: 'unknown_tool', message: 'Error: unknown tool "cancel_ticket". Available tools: book_ticket.' },
    })
    expect(validateCall(call('x', '{}'), new Map()).invalid?.message).toContain('Available tools: (none).')
  })

  it('says when the arguments are not JSON', () => {
    const prepared = validateCall(call('book_ticket', '{train: 42'), tools)
    expect(prepared.invalid?.outcome).toBe('invalid_arguments')
    expect(prepared.invalid?.message).toMatch(/^Error: the arguments for "book_ticket" are not valid JSON \(/)
  })

  it('lists the schema issues, and keeps what was sent', () => {
    const prepared = validateCall(call('book_ticket', '{"train": "ICE"}'), tools)
    expect(prepared.args).toEqual({ train: 'ICE' })
    expect(prepared.invalid?.message).toMatch(/^Error: invalid arguments for "book_ticket", the tool did not run:\n- /)
  })
})

describe('createCallPreparer', () => {
  it('validates each call object once', () => {
    let validations = 0
    const counting = new Map<string, Tool<unknown>>([
      [
        'book_ticket',
        {
          ...book,
          validate: (args: unknown) => {
            validations++
            return book.validate(args)
          },
        } as Tool<unknown>,
      ],
    ])
    const prepare = createCallPreparer(counting)
    const one = call('book_ticket', '{"train": 1}')
    expect(prepare(one)).toBe(prepare(one))
    prepare(call('book_ticket', '{"train": 1}'))
    expect(validations).toBe(2)
  })
})

describe('openCall', () => {
  it('opens the call with its prepared arguments, nothing decided yet', () => {
    const raw = call('book_ticket', '{"train": 7}')
    expect(openCall(raw, validateCall(raw, tools), 1_234)).toEqual({
      callId: 'call-1',
      toolName: 'book_ticket',
      rawArguments: '{"train": 7}',
      args: { train: 7 },
      startedAt: 1_234,
      invalid: undefined,
      approval: undefined,
      result: undefined,
    })
  })
})

import { jsonSchemaTool, type Message, type Tool } from '@signalbox/core'
import { resultText } from './call-result.ts'
import { compileArgumentsValidator } from './schema-validator.ts'
import { signalboxToolName } from './tool-names.ts'

/** A resource the server lists (`resources/list`). */
export interface McpResource {
  uri: string
  name: string
  title?: string
  description?: string
  mimeType?: string
}

/** A prompt the server offers (`prompts/list`). */
export interface McpPrompt {
  name: string
  title?: string
  description?: string
  arguments?: { name: string; description?: string; required?: boolean }[]
}

/** A prompt filled in by the server (`prompts/get`), as chat messages an agent run can start from. */
export interface McpPromptMessages {
  description?: string
  messages: Message[]
}

/** What the resource tools need of their toolset. */
export interface ResourceSource {
  listResources(options: { signal?: AbortSignal }): Promise<McpResource[]>
  readResource(uri: string, options: { signal?: AbortSignal }): Promise<string>
}

/** The text of a read resource: text contents as they are, binary ones as a short note (like tool results). */
export function resourceText(contents: unknown[]): string {
  return resultText({ content: contents.map((resource) => ({ type: 'resource', resource })) })
}

/** A prompt's messages as chat messages: text as it is, other content as resultText writes it. */
export function promptMessages(result: {
  description?: string
  messages: { role: string; content: unknown }[]
}): McpPromptMessages {
  const messages = result.messages.map((message): Message => {
    const content = resultText({ content: [message.content] })
    return message.role === 'assistant' ? { role: 'assistant', content } : { role: 'user', content }
  })
  return { ...(result.description ? { description: result.description } : {}), messages }
}

/**
 * The server's resources as two read-only tools the model can call: `<prefix>list_resources`
 * (what there is) and `<prefix>read_resource` (one of them, by URI). Resources are the
 * application's to offer (MCP): these tools are opt-in (`resources: true`).
 */
export function resourceTools(server: string, source: ResourceSource, prefix = ''): Tool<any>[] {
  const uriSchema = {
    type: 'object',
    properties: { uri: { type: 'string', description: 'The resource URI, as list_resources gives it.' } },
    required: ['uri'],
    additionalProperties: false,
  }
  const list = jsonSchemaTool<Record<string, never>>({
    name: signalboxToolName('list_resources', prefix),
    description: `Lists the resources (documents, data) the MCP server "${server}" offers: URI, name, description.`,
    parameters: { type: 'object', properties: {}, additionalProperties: false },
    validate: compileArgumentsValidator({ type: 'object' }, 'list_resources') as never,
    execute: async (_args, context) => {
      const resources = await source.listResources({ signal: context.signal })
      if (resources.length === 0) return `The MCP server "${server}" offers no resources.`
      return resources
        .map(
          (r) =>
            `${r.uri} — ${r.title ?? r.name}${r.description ? `: ${r.description}` : ''}${r.mimeType ? ` (${r.mimeType})` : ''}`,
        )
        .join('\n')
    },
  })
  const read = jsonSchemaTool<{ uri: string }>({
    name: signalboxToolName('read_resource', prefix),
    description: `Reads one resource of the MCP server "${server}" by its URI (from list_resources).`,
    parameters: uriSchema,
    validate: compileArgumentsValidator(uriSchema, 'read_resource') as never,
    execute: (args, context) => source.readResource(args.uri, { signal: context.signal }),
  })
  return [list, read]
}

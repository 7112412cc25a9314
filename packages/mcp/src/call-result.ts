/** The parts of an MCP `CallToolResult` the model reads. */
export interface McpCallResult {
  content?: unknown[]
  structuredContent?: unknown
  isError?: boolean
}

/**
 * The text the model reads for a tool result: text blocks as they are, embedded text resources
 * by their text, and a short bracketed note for binary content the chat API cannot carry.
 */
export function resultText(result: McpCallResult): string {
  const content = Array.isArray(result.content) ? result.content : []
  if (content.length === 0 && result.structuredContent !== undefined) return JSON.stringify(result.structuredContent)
  return content.map(blockText).join('\n')
}

function blockText(block: unknown): string {
  if (typeof block !== 'object' || block === null) return String(block)
  const b = block as Record<string, unknown>
  switch (b.type) {
    case 'text':
      return String(b.text ?? '')
    case 'image':
    case 'audio':
      return `[${b.type} ${String(b.mimeType ?? '')}, ${base64Bytes(b.data)} bytes]`
    case 'resource_link':
      return `[resource ${String(b.uri ?? '')}${b.name ? ` "${String(b.name)}"` : ''}]`
    case 'resource': {
      const resource = (b.resource ?? {}) as Record<string, unknown>
      if (typeof resource.text === 'string') return resource.text
      return `[resource ${String(resource.uri ?? '')} ${String(resource.mimeType ?? '')}, ${base64Bytes(resource.blob)} bytes]`
    }
    default:
      return JSON.stringify(block)
  }
}

const base64Bytes = (data: unknown) => (typeof data === 'string' ? Math.floor((data.replace(/=+$/, '').length * 3) / 4) : 0)

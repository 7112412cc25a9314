/**
 * Child-process entry for the bench's scripted model server: prints `{"url": ...}` on stdout,
 * stops when its stdin closes (so it never outlives the bench), and reports unexpected requests.
 */
import { startInThisProcess } from './model-server.ts'

const { server, stop } = await startInThisProcess()
process.stdout.write(`${JSON.stringify({ url: server.url })}\n`)

process.stdin.resume()
process.stdin.on('end', () => {
  stop().then(
    () => process.exit(0),
    (error: unknown) => {
      console.error('model server:', error)
      process.exit(1)
    },
  )
})

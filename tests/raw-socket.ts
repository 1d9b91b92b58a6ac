/**
 * A raw TCP client for tests that must misbehave on purpose (stall a body, trickle headers, hold a
 * keep-alive connection): fetch cannot do any of that.
 * @module
 */
import { connect, type Socket } from 'node:net'

/** An open connection with what it has received and when it closed. */
export interface RawConnection {
  readonly socket: Socket
  /** Everything received so far, as text. */
  received(): string
  /** Milliseconds from connect to close, or null while open. */
  closedAfter(): number | null
  /** Resolves once the server closed the connection, or with null after `ms`. */
  closed(ms: number): Promise<number | null>
  /** Resolves once `text` has been received, or false after `ms`. */
  waitFor(text: string, ms: number): Promise<boolean>
  destroy(): void
}

/** Connects to `url`'s host and port (optionally from a given local address) and sends `head`. */
export function rawConnect(url: string, head: string, options: { localAddress?: string } = {}): Promise<RawConnection> {
  const { hostname, port } = new URL(url)
  const started = Date.now()
  let data = ''
  let closedAt: number | null = null
  const socket = connect({ host: hostname, port: Number(port), localAddress: options.localAddress })
  socket.on('data', (chunk) => {
    data += chunk.toString('latin1')
  })
  socket.on('error', () => {})
  const onClose = new Promise<void>((resolve) =>
    socket.once('close', () => {
      closedAt = Date.now() - started
      resolve()
    }),
  )
  const within = <T>(promise: Promise<T>, ms: number, fallback: T) => {
    let timer: ReturnType<typeof setTimeout> | undefined
    return Promise.race([
      promise,
      new Promise<T>((resolve) => {
        timer = setTimeout(() => resolve(fallback), ms)
      }),
    ]).finally(() => clearTimeout(timer))
  }
  return new Promise((resolve, reject) => {
    socket.once('error', reject)
    socket.once('connect', () => {
      socket.off('error', reject)
      if (head) socket.write(head)
      resolve({
        socket,
        received: () => data,
        closedAfter: () => closedAt,
        closed: (ms) =>
          within(
            onClose.then(() => closedAt),
            ms,
            null,
          ),
        waitFor: async (text, ms) => {
          const deadline = Date.now() + ms
          while (!data.includes(text)) {
            if (closedAt !== null || Date.now() > deadline) return data.includes(text)
            await new Promise((r) => setTimeout(r, 20))
          }
          return true
        },
        destroy: () => socket.destroy(),
      })
    })
  })
}

/**
 * Server-Sent Events: framing, heartbeats, `Last-Event-ID` resume and cleanup on disconnect.
 *
 * Why our own: every event stream in both surfaces needs the same guarantees: a comment
 * heartbeat so proxies and Bun's idle timer never cut a quiet stream, an `id:` on every event so a
 * reconnecting client resumes without loss, and cleanup that runs exactly once whether the client
 * leaves, the producer ends the stream, or the server shuts down.
 * @module
 */

/** One event to send. `data` is JSON-encoded unless it is already a string. */
export interface SseEvent {
  id: string | number
  event?: string
  data: unknown
  /** Reconnection delay hint for the client, in milliseconds. */
  retry?: number
}

/** The producer's handle on an open stream. */
export interface SseSink {
  send(event: SseEvent): void
  /** Sends a comment line (ignored by clients), e.g. to flush a proxy. */
  comment(text: string): void
  close(): void
  readonly closed: boolean
}

/** Tracks open streams so shutdown can end them all promptly. */
export class StreamRegistry {
  readonly #open = new Set<() => void>()

  /** Registers a closer; returns a function that unregisters it. */
  add(close: () => void): () => void {
    this.#open.add(close)
    return () => {
      this.#open.delete(close)
    }
  }

  /** Number of open streams (exposed for tests and status). */
  get size(): number {
    return this.#open.size
  }

  /** Closes every open stream. */
  closeAll(): void {
    for (const close of [...this.#open]) close()
    this.#open.clear()
  }
}

const encoder = new TextEncoder()

function field(name: string, value: string): string {
  if (/[\r\n]/.test(value)) throw new Error(`SSE ${name} must not contain line breaks`)
  return `${name}: ${value}\n`
}

/** Encodes one event as an SSE frame; multi-line data becomes several `data:` lines. */
export function encodeEvent(event: SseEvent): string {
  let frame = field('id', String(event.id))
  if (event.event) frame += field('event', event.event)
  if (event.retry !== undefined) frame += `retry: ${Math.max(0, Math.floor(event.retry))}\n`
  const data = typeof event.data === 'string' ? event.data : JSON.stringify(event.data)
  for (const line of data.split(/\r\n|\r|\n/)) frame += `data: ${line}\n`
  return frame + '\n'
}

/** Options for {@link sseResponse}. */
export interface SseOptions {
  registry: StreamRegistry
  /** Heartbeat comment interval; default 15 s (well below common proxy idle timeouts). */
  heartbeatMs?: number
  headers?: HeadersInit
  /**
   * Starts producing. Called once the stream is open; may return a cleanup function that runs
   * exactly once when the stream ends for any reason.
   */
  start(sink: SseSink): void | (() => void) | Promise<void | (() => void)>
}

/** The `Last-Event-ID` a reconnecting client sent (header, or `lastEventId` query for EventSource polyfills). */
export function lastEventId(request: Request, url = new URL(request.url)): string | null {
  return request.headers.get('last-event-id') ?? url.searchParams.get('lastEventId')
}

/** True when the client asked for an event stream rather than JSON. */
export function wantsEventStream(request: Request): boolean {
  return (request.headers.get('accept') ?? '').includes('text/event-stream')
}

/** Opens an SSE response. */
export function sseResponse(options: SseOptions): Response {
  let cleanup: (() => void) | void
  let heartbeat: ReturnType<typeof setInterval> | undefined
  let unregister = () => {}
  let controllerRef: ReadableStreamDefaultController<Uint8Array> | undefined
  let closed = false

  const finish = () => {
    if (closed) return
    closed = true
    if (heartbeat) clearInterval(heartbeat)
    unregister()
    try {
      cleanup?.()
    } catch {
      /* cleanup must not throw into the stream machinery */
    }
    try {
      controllerRef?.close()
    } catch {
      /* already closed or cancelled */
    }
  }

  const enqueue = (text: string) => {
    if (closed || !controllerRef) return
    try {
      controllerRef.enqueue(encoder.encode(text))
    } catch {
      finish()
    }
  }

  const sink: SseSink = {
    send: (event) => enqueue(encodeEvent(event)),
    comment: (text) => enqueue(`: ${text.replace(/[\r\n]+/g, ' ')}\n\n`),
    close: finish,
    get closed() {
      return closed
    },
  }

  const stream = new ReadableStream<Uint8Array>({
    async start(controller) {
      controllerRef = controller
      unregister = options.registry.add(finish)
      // An initial comment makes the response headers and first bytes flush immediately.
      enqueue(': open\n\n')
      heartbeat = setInterval(() => sink.comment('ping'), options.heartbeatMs ?? 15_000)
      try {
        const result = await options.start(sink)
        if (closed) {
          try {
            result?.()
          } catch {
            /* ignore */
          }
        } else cleanup = result
      } catch (error) {
        enqueue(
          encodeEvent({
            id: 'error',
            event: 'error',
            data: { code: 'stream_failed', message: 'Event stream failed to start' },
          }),
        )
        finish()
        throw error
      }
    },
    // Both Bun and Deno call cancel() when the client disconnects; it is the portable hook.
    cancel() {
      finish()
    },
  })

  const headers = new Headers(options.headers)
  headers.set('content-type', 'text/event-stream; charset=utf-8')
  headers.set('cache-control', 'no-cache, no-transform')
  headers.set('x-accel-buffering', 'no')
  return new Response(stream, { status: 200, headers })
}

/** A sequenced item that can be replayed from a cursor. */
export interface Sequenced {
  seq: number
}

/**
 * Replays what the client missed, then follows live items, with no gap and no duplicate:
 * subscribe first (buffering), read the backlog, then drain the buffer skipping what was sent.
 */
export async function replayThenFollow<T extends Sequenced>(options: {
  sink: SseSink
  after: number
  backlog: (after: number) => Promise<T[]> | T[]
  subscribe: (listener: (item: T) => void) => () => void
  toEvent: (item: T) => SseEvent
}): Promise<() => void> {
  let last = options.after
  let live = false
  const buffered: T[] = []
  const deliver = (item: T) => {
    if (item.seq <= last) return
    last = item.seq
    options.sink.send(options.toEvent(item))
  }
  const unsubscribe = options.subscribe((item) => {
    if (live) deliver(item)
    else buffered.push(item)
  })
  try {
    for (const item of await options.backlog(options.after)) deliver(item)
    for (const item of buffered.sort((a, b) => a.seq - b.seq)) deliver(item)
    buffered.length = 0
    live = true
  } catch (error) {
    unsubscribe()
    throw error
  }
  return unsubscribe
}

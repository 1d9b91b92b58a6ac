/**
 * Passes a sidecar's Server-Sent Events through unbuffered, adding our own heartbeat frame when
 * the sidecar goes quiet.
 *
 * Upstream users lost streams silently behind buffering proxies; a frame every `heartbeatMs` keeps
 * intermediaries and idle timers from cutting a quiet stream and lets clients detect a dead one.
 * Heartbeats are only inserted between frames (never inside a half-received one), and each chunk
 * is forwarded the moment it arrives.
 * @module
 */
import type { StreamRegistry } from '../../core/sse.ts'

/** Options for {@link relayEventStream}. */
export interface EventRelayOptions {
  heartbeatMs: number
  /** The frame to send, e.g. `data: {"type":"server.heartbeat","properties":{}}\n\n`. */
  heartbeatFrame: string
  /** Shutdown closes every open relay through this registry. */
  registry: StreamRegistry
  /** Called once when the client leaves or shutdown closes the stream; the upstream request is then aborted. */
  onClientCancel(): void
  /** Called once when the sidecar ends the stream (cleanly or not). */
  onUpstreamEnd(reason: 'ended' | 'dropped'): void
  /**
   * When given, the stream is relayed frame by frame and a frame is dropped when this returns
   * false for its `data` (e.g. another directory's events on `/global/event`). Frames are still
   * forwarded as soon as their terminating blank line arrives.
   */
  keepFrame?: (data: string) => boolean
}

const encoder = new TextEncoder()
const LF = 10
const CR = 13

/** The heartbeat frame for a path: `/global/event` wraps events in `{payload}`, `/event` does not. */
export function heartbeatFrameFor(path: string): string {
  const event = { type: 'server.heartbeat', properties: {} }
  return `data: ${JSON.stringify(path.startsWith('/global/') ? { payload: event } : event)}\n\n`
}

/** Relays `source` (an SSE body) with heartbeats; returns the client-facing stream. */
export function relayEventStream(
  source: ReadableStream<Uint8Array>,
  options: EventRelayOptions,
): ReadableStream<Uint8Array> {
  const reader = source.getReader()
  let controllerRef!: ReadableStreamDefaultController<Uint8Array>
  let timer: ReturnType<typeof setTimeout> | undefined
  let closed = false
  // True when everything sent so far ends on a frame boundary (a blank line).
  let atBoundary = true
  let tail: number[] = []
  let unregister = () => {}
  const filter = options.keepFrame ? frameFilter(options.keepFrame) : null

  const end = (how: 'client' | 'shutdown' | 'ended' | 'dropped') => {
    if (closed) return
    closed = true
    clearTimeout(timer)
    unregister()
    if (how === 'client' || how === 'shutdown') {
      options.onClientCancel()
      reader.cancel().catch(() => {})
      if (how === 'shutdown')
        try {
          controllerRef.close()
        } catch {
          /* already closed */
        }
    } else {
      options.onUpstreamEnd(how)
      try {
        controllerRef.close()
      } catch {
        /* already closed */
      }
    }
  }

  const schedule = () => {
    clearTimeout(timer)
    timer = setTimeout(() => {
      if (closed) return
      if (atBoundary) {
        try {
          controllerRef.enqueue(encoder.encode(options.heartbeatFrame))
        } catch {
          end('client')
          return
        }
      }
      schedule()
    }, options.heartbeatMs)
  }

  const track = (chunk: Uint8Array) => {
    tail = tail.concat(Array.from(chunk.subarray(Math.max(0, chunk.length - 4)))).slice(-4)
    const n = tail.length
    const lfLf = n >= 2 && tail[n - 1] === LF && tail[n - 2] === LF
    const crlfCrlf = n >= 4 && tail[n - 1] === LF && tail[n - 2] === CR && tail[n - 3] === LF && tail[n - 4] === CR
    const crCr = n >= 2 && tail[n - 1] === CR && tail[n - 2] === CR
    atBoundary = lfLf || crlfCrlf || crCr
  }

  return new ReadableStream<Uint8Array>({
    start(controller) {
      controllerRef = controller
      unregister = options.registry.add(() => end('shutdown'))
      schedule()
      void (async () => {
        try {
          for (;;) {
            const next = await reader.read()
            if (closed) return
            if (next.done) {
              end('ended')
              return
            }
            if (next.value.length === 0) continue
            if (filter) {
              for (const frame of filter.push(next.value)) controller.enqueue(frame)
            } else {
              track(next.value)
              controller.enqueue(next.value)
            }
            schedule()
          }
        } catch {
          end('dropped')
        }
      })()
    },
    cancel() {
      end('client')
    },
  })
}

/** Splits SSE bytes into whole frames and keeps those `keep` accepts (frames without data are kept). */
function frameFilter(keep: (data: string) => boolean): { push(chunk: Uint8Array): Uint8Array[] } {
  const decoder = new TextDecoder()
  let buffer = ''
  return {
    push(chunk) {
      buffer += decoder.decode(chunk, { stream: true })
      const out: Uint8Array[] = []
      for (;;) {
        const match = /\r?\n\r?\n/.exec(buffer)
        if (!match) break
        const frame = buffer.slice(0, match.index + match[0].length)
        buffer = buffer.slice(match.index + match[0].length)
        const data = frame
          .split(/\r?\n/)
          .filter((line) => line.startsWith('data:'))
          .map((line) => line.slice(5).replace(/^ /, ''))
          .join('\n')
        if (data === '' || keep(data)) out.push(encoder.encode(frame))
      }
      return out
    },
  }
}

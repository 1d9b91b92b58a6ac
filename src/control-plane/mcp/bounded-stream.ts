/**
 * An event stream that cuts off a client that stopped reading.
 *
 * Why: the MCP SDK writes server messages into its stream without looking at backpressure, so a
 * client that keeps its connection open but never reads would make the server hold every message
 * it is sent, for as long as the socket lives (event streams are exempt from the idle timeout).
 * This wrapper reads the SDK's stream as fast as it produces and queues what the socket has not
 * taken yet; past `maxBufferedBytes` it cancels the source and errors the response, which drops
 * the queue and closes the connection.
 * @module
 */

/** Options for {@link boundedStream}. */
export interface BoundedStreamOptions {
  /** Bytes the response may hold unsent before the stream is cut. */
  maxBufferedBytes: number
  /** Called once when the stream ends for any reason; `cut` is true when it was cut for a slow reader. */
  onEnd?: (cut: boolean) => void
}

/** Wraps `source` so a reader that falls more than `maxBufferedBytes` behind is cut off. */
export function boundedStream(
  source: ReadableStream<Uint8Array>,
  options: BoundedStreamOptions,
): ReadableStream<Uint8Array> {
  const reader = source.getReader()
  let ended = false
  const end = (cut: boolean) => {
    if (ended) return
    ended = true
    options.onEnd?.(cut)
  }
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        void (async () => {
          try {
            for (;;) {
              const { done, value } = await reader.read()
              if (ended) return
              if (done) {
                controller.close()
                end(false)
                return
              }
              controller.enqueue(value)
              // desiredSize is the high-water mark minus what is queued: below -max the reader is
              // that far behind.
              if ((controller.desiredSize ?? 0) < -options.maxBufferedBytes) {
                end(true)
                reader.cancel('slow reader').catch(() => {})
                controller.error(new Error('The client stopped reading its event stream'))
                return
              }
            }
          } catch {
            if (ended) return
            end(false)
            try {
              controller.close()
            } catch {
              /* already errored or closed */
            }
          }
        })()
      },
      cancel(reason) {
        end(false)
        return reader.cancel(reason).catch(() => {})
      },
    },
    new ByteLengthQueuingStrategy({ highWaterMark: 64 * 1024 }),
  )
}

/**
 * Relays an upstream response body to the client chunk by chunk, never holding more than the
 * stream machinery's own small queue.
 *
 * Why a wrapper instead of handing `upstream.body` straight to the Response: its `cancel()` is the
 * one disconnect hook both Bun and Deno call when the client goes away (Deno's `request.signal`
 * also fires after every normal response, so it cannot mean "client left"), and it lets a body that
 * stalls mid-way be cut instead of holding a connection forever.
 * @module
 */

/** Options for {@link relayBody}. */
export interface RelayOptions {
  /** Cut the body when the upstream sends nothing for this long. */
  idleTimeoutMs: number
  /** Called once when the client stops reading (disconnect or cancel). */
  onClientCancel(): void
  /** Called once when the upstream failed or stalled mid-body. */
  onUpstreamError(reason: 'stalled' | 'dropped'): void
}

/** A pull-based copy of `source`: the upstream is read only as fast as the client reads. */
export function relayBody(source: ReadableStream<Uint8Array>, options: RelayOptions): ReadableStream<Uint8Array> {
  const reader = source.getReader()
  let finished = false
  const finish = () => {
    const first = !finished
    finished = true
    return first
  }
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        let timer: ReturnType<typeof setTimeout> | undefined
        const stalled = new Promise<'stalled'>((resolve) => {
          timer = setTimeout(() => resolve('stalled'), options.idleTimeoutMs)
        })
        try {
          const next = await Promise.race([reader.read(), stalled])
          if (next === 'stalled') {
            if (finish()) options.onUpstreamError('stalled')
            reader.cancel().catch(() => {})
            controller.error(new Error('sidecar response stalled'))
            return
          }
          if (next.done) {
            finish()
            controller.close()
            return
          }
          controller.enqueue(next.value)
        } catch (error) {
          if (finish()) options.onUpstreamError('dropped')
          controller.error(error)
        } finally {
          clearTimeout(timer)
        }
      },
      cancel(reason) {
        if (finish()) options.onClientCancel()
        return reader.cancel(reason).catch(() => {})
      },
    },
    { highWaterMark: 0 },
  )
}

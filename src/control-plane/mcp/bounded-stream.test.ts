/**
 * The slow-reader cut-off: a stream whose reader stops is cut once the unsent bytes pass the bound
 * (its source cancelled, so the producer lets go too); a reader that keeps up gets everything.
 */
import { assert, suite } from '../../../tests/harness.ts'
import { boundedStream } from './bounded-stream.ts'
import { MemoryEventStore } from './memory-event-store.ts'

const test = suite('control-plane/mcp/bounded-stream', { timeoutMs: 20_000 })

/** A source that enqueues a 16 KiB chunk every tick, ignoring backpressure (as the SDK does). */
function flood(): { stream: ReadableStream<Uint8Array>; cancelled: () => boolean; stop(): void } {
  let cancelled = false
  let timer: ReturnType<typeof setInterval> | undefined
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      timer = setInterval(() => {
        try {
          controller.enqueue(new Uint8Array(16 * 1024))
        } catch {
          clearInterval(timer)
        }
      }, 1)
    },
    cancel() {
      cancelled = true
      clearInterval(timer)
    },
  })
  return { stream, cancelled: () => cancelled, stop: () => clearInterval(timer) }
}

test('a reader that stops is cut off past the bound and the source is cancelled', async () => {
  const source = flood()
  let cut: boolean | null = null
  const bounded = boundedStream(source.stream, { maxBufferedBytes: 256 * 1024, onEnd: (c) => (cut = c) })
  const reader = bounded.getReader()
  await reader.read()
  // Stop reading; the producer keeps going.
  const deadline = Date.now() + 10_000
  while (cut === null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20))
  source.stop()
  assert.is(cut, true)
  assert.ok(source.cancelled(), 'the producer is told to stop')
  let failed = false
  try {
    for (;;) if ((await reader.read()).done) break
  } catch {
    failed = true
  }
  assert.ok(failed, 'the response errors instead of ending cleanly')
})

test('a reader that keeps up receives every byte in order and the end', async () => {
  const chunks = Array.from({ length: 50 }, (_, i) => new Uint8Array(8 * 1024).fill(i))
  const source = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const c of chunks) controller.enqueue(c)
      controller.close()
    },
  })
  let cut: boolean | null = null
  const bounded = boundedStream(source, { maxBufferedBytes: 1024 * 1024, onEnd: (c) => (cut = c) })
  const got = new Uint8Array(await new Response(bounded).arrayBuffer())
  assert.is(got.length, 50 * 8 * 1024)
  assert.is(got[0], 0)
  assert.is(got[got.length - 1], 49)
  assert.is(cut, false)
})

test('the event store replays only the later events of the same stream and forgets the oldest', async () => {
  const store = new MemoryEventStore(3)
  const msg = (n: number) => ({ jsonrpc: '2.0' as const, method: 'notifications/message', params: { n } })
  const first = await store.storeEvent('s1', msg(1))
  await store.storeEvent('s2', msg(2))
  await store.storeEvent('s1', msg(3))
  const replayed: unknown[] = []
  assert.is(await store.replayEventsAfter(first, { send: async (_id, m) => void replayed.push(m) }), 's1')
  assert.equal(replayed, [msg(3)])
  await store.storeEvent('s1', msg(4))
  assert.is(store.size, 3)
  assert.is(await store.getStreamIdForEventId(first), undefined, 'the oldest event is forgotten')
  assert.is(await store.getStreamIdForEventId('not-a-number'), undefined)
})

test.run()

import { assert, readSse, suite, takeSse } from '../../tests/harness.ts'
import { encodeEvent, replayThenFollow, sseResponse, StreamRegistry, type SseSink } from './sse.ts'

const sse = suite('core/sse')

sse('events carry an id, an optional name and JSON data split across data lines', () => {
  assert.is(encodeEvent({ id: 3, event: 'x.changed', data: { a: 1 } }), 'id: 3\nevent: x.changed\ndata: {"a":1}\n\n')
  assert.is(encodeEvent({ id: 'a', data: 'line1\nline2' }), 'id: a\ndata: line1\ndata: line2\n\n')
  assert.throws(() => encodeEvent({ id: 'bad\nid', data: 1 }), /line breaks/)
})

sse('a stream delivers events with ids and sends heartbeat comments while quiet', async () => {
  const registry = new StreamRegistry()
  let sink!: SseSink
  const res = sseResponse({
    registry,
    heartbeatMs: 50,
    start: (s) => {
      sink = s
    },
  })
  assert.is(res.headers.get('content-type'), 'text/event-stream; charset=utf-8')
  const reader = res.body!.getReader()
  const decoder = new TextDecoder()
  let text = ''
  const read = async (until: (t: string) => boolean) => {
    while (!until(text)) {
      const { value, done } = await reader.read()
      if (done) break
      text += decoder.decode(value)
    }
  }
  await read((t) => t.includes(': open'))
  sink.send({ id: 1, event: 'e', data: { n: 1 } })
  await read((t) => t.includes('id: 1'))
  await read((t) => t.includes(': ping'))
  assert.match(text, /id: 1\nevent: e\ndata: \{"n":1\}\n\n/)
  assert.match(text, /: ping\n\n/)
  await reader.cancel()
})

sse('cleanup runs exactly once when the client disconnects, and the registry forgets the stream', async () => {
  const registry = new StreamRegistry()
  let cleanups = 0
  const res = sseResponse({
    registry,
    start: () => () => {
      cleanups++
    },
  })
  const reader = res.body!.getReader()
  await reader.read()
  assert.is(registry.size, 1)
  await reader.cancel()
  await new Promise((r) => setTimeout(r, 10))
  assert.is(cleanups, 1)
  assert.is(registry.size, 0)
})

sse('closing the registry ends every open stream (shutdown path)', async () => {
  const registry = new StreamRegistry()
  let cleanups = 0
  const responses = [1, 2, 3].map(() =>
    sseResponse({
      registry,
      start: () => () => {
        cleanups++
      },
    }),
  )
  const readers = responses.map((r) => r.body!.getReader())
  await Promise.all(readers.map((r) => r.read()))
  assert.is(registry.size, 3)
  registry.closeAll()
  for (const reader of readers) {
    let done = false
    while (!done) done = (await reader.read()).done
    assert.ok(done)
  }
  assert.is(cleanups, 3)
})

sse('replayThenFollow sends the backlog then live items with no gap and no duplicate', async () => {
  const registry = new StreamRegistry()
  type Item = { seq: number }
  const stored: Item[] = [{ seq: 1 }, { seq: 2 }, { seq: 3 }, { seq: 4 }]
  const listeners = new Set<(item: Item) => void>()
  const publish = (item: Item) => {
    stored.push(item)
    for (const l of listeners) l(item)
  }
  const res = sseResponse({
    registry,
    start: (sink) =>
      replayThenFollow<Item>({
        sink,
        after: 2,
        // Publishing while the backlog is read simulates the race between reading and subscribing.
        backlog: async (after) => {
          const items = stored.filter((i) => i.seq > after)
          publish({ seq: 5 })
          return items
        },
        subscribe: (l) => {
          listeners.add(l)
          return () => listeners.delete(l)
        },
        toEvent: (item) => ({ id: item.seq, data: item }),
      }),
  })
  setTimeout(() => publish({ seq: 6 }), 20)
  const frames = await takeSse(res, 4, 2000)
  assert.equal(
    frames.map((f) => f.id),
    ['3', '4', '5', '6'],
  )
  await new Promise((r) => setTimeout(r, 10))
  assert.is(listeners.size, 0, 'unsubscribed after the client left')
})

sse('a producer error becomes an error event and ends the stream', async () => {
  const registry = new StreamRegistry()
  const res = sseResponse({
    registry,
    start: () => {
      throw new Error('backlog unavailable')
    },
  })
  const frames: string[] = []
  for await (const frame of readSse(res)) frames.push(frame.event ?? '')
  assert.equal(frames, ['error'])
  assert.is(registry.size, 0)
})

sse.run()

import { assert, readSse, suite } from '../tests/harness.ts'
import { idleShrinker, serve } from './serve.ts'
import { sseResponse, StreamRegistry, type SseSink } from './core/sse.ts'

const seam = suite('serve', { timeoutMs: 40_000 })

seam('a quiet event stream outlives the runtime idle timeout (Bun cuts at 10 s by default)', async () => {
  const registry = new StreamRegistry()
  let sink!: SseSink
  const listener = await serve({
    host: '127.0.0.1',
    port: 0,
    fetch: async () =>
      sseResponse({
        registry,
        heartbeatMs: 60_000,
        start: (s) => {
          sink = s
          s.send({ id: 1, data: 'first' })
        },
      }),
  })
  try {
    const res = await fetch(`http://127.0.0.1:${listener.port}/`)
    const frames = readSse(res)
    assert.is((await frames.next()).value?.data, 'first')
    // No heartbeat (60 s interval) and no data for 11 s: only idleTimeout 0 keeps this alive.
    await new Promise((r) => setTimeout(r, 11_000))
    sink.send({ id: 2, data: 'second' })
    const second = await frames.next()
    assert.is(second.value?.data, 'second')
    await frames.return(undefined)
  } finally {
    registry.closeAll()
    await listener.stop()
  }
})

seam('shutdown ends open streams and stops the listener within 2 s', async () => {
  const registry = new StreamRegistry()
  const listener = await serve({
    host: '127.0.0.1',
    port: 0,
    fetch: async () =>
      sseResponse({
        registry,
        start: (s) => {
          s.send({ id: 1, data: 'hello' })
        },
      }),
  })
  const res = await fetch(`http://127.0.0.1:${listener.port}/`)
  const frames = readSse(res)
  assert.is((await frames.next()).value?.data, 'hello')
  const started = performance.now()
  registry.closeAll()
  await listener.stop()
  const end = await frames.next()
  assert.ok(end.done, 'the client sees the stream end')
  assert.ok(performance.now() - started < 2000)
  let refused = false
  try {
    await fetch(`http://127.0.0.1:${listener.port}/`)
  } catch {
    refused = true
  }
  assert.ok(refused, 'the port no longer accepts connections')
})

seam('port 0 binds an ephemeral port and reports it', async () => {
  const listener = await serve({ host: '127.0.0.1', port: 0, fetch: async () => new Response('ok') })
  try {
    assert.ok(listener.port > 0)
    assert.is(await (await fetch(`http://127.0.0.1:${listener.port}/`)).text(), 'ok')
  } finally {
    await listener.stop()
  }
})

seam(
  'memory is given back when quiet: compiled code after start-up and after a long quiet, only garbage after a burst',
  async () => {
    const calls: string[] = []
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
    const active = idleShrinker({
      delayMs: 30,
      longDelayMs: 400,
      collect: () => calls.push('collect'),
      shrink: () => calls.push('shrink'),
    })
    // Start-up counts as a burst: its code ran once, so it goes with its garbage (twice: the sweep ends late).
    await sleep(200)
    assert.equal(calls, ['shrink', 'shrink'])
    // A burst of requests, then a short quiet: garbage goes, the request path stays compiled.
    calls.length = 0
    for (let i = 0; i < 5; i++) {
      active()
      await sleep(5)
    }
    await sleep(200)
    assert.equal(calls, ['collect', 'collect'])
    // A request before the long quiet ends keeps the code, and starts the count again.
    active()
    await sleep(200)
    assert.equal(calls, ['collect', 'collect', 'collect', 'collect'])
    await sleep(450)
    assert.equal(
      calls,
      ['collect', 'collect', 'collect', 'collect', 'shrink'],
      'the long quiet gives back compiled code too',
    )
    // Nothing more while the server stays quiet.
    await sleep(500)
    assert.is(calls.length, 5)
  },
)

seam.run()

import { createHash } from 'node:crypto'
import { serve } from '../../serve.ts'
import { assert, request, suite, takeSse } from '../../../tests/harness.ts'
import { eventually, startProxyFixture, type ProxyFixture } from '../testing/sidecar-test-kit.ts'

const ctx = {} as ProxyFixture
const proxy = suite('workspace/sidecar streaming (fake upstream)', { timeoutMs: 20_000 })

proxy.before(async () => {
  Object.assign(ctx, await startProxyFixture())
})
proxy.after(async () => {
  await ctx.close?.()
})

proxy('an event stream passes through unbuffered with our heartbeat when the upstream is quiet', async () => {
  const res = await ctx.kit.req('/sidecar/event', { as: 'viewer' })
  assert.is(res.status, 200)
  assert.match(res.headers.get('content-type') ?? '', /text\/event-stream/)
  assert.is(res.headers.get('x-accel-buffering'), 'no')
  const frames = await takeSse(res, 3, 3000)
  assert.is(JSON.parse(frames[0]!.data).type, 'server.connected')
  assert.equal(
    frames.slice(1).map((f) => JSON.parse(f.data)),
    [
      { type: 'server.heartbeat', properties: {} },
      { type: 'server.heartbeat', properties: {} },
    ],
  )
  const global = await ctx.kit.req('/sidecar/global/event')
  const globalFrames = await takeSse(global, 2, 3000)
  assert.equal(JSON.parse(globalFrames[1]!.data), { payload: { type: 'server.heartbeat', properties: {} } })
})

proxy('the global event stream only carries this workspace directory and server-wide events', async () => {
  const res = await ctx.kit.req('/sidecar/global/event?mode=mixed')
  const frames = await takeSse(res, 3, 3000)
  assert.equal(
    frames.map((f) => JSON.parse(f.data).payload.type),
    ['server.connected', 'x.own', 'x.global'],
  )
})

proxy('HEAD on an event stream answers headers only and releases the upstream stream', async () => {
  const before = ctx.fake.aborts.filter((p) => p === '/event').length
  const res = await ctx.kit.req('/sidecar/event', { method: 'HEAD', as: 'viewer' })
  assert.is(res.status, 200)
  assert.match(res.headers.get('content-type') ?? '', /text\/event-stream/)
  assert.is(await res.text(), '')
  await eventually(() => ctx.fake.aborts.filter((p) => p === '/event').length > before, 'upstream release')
  assert.is(ctx.kit.app.streams.size, 0)
})

proxy('a heartbeat is never inserted inside a half-received frame', async () => {
  const res = await ctx.kit.req('/sidecar/event?mode=half')
  const reader = res.body!.getReader()
  let text = ''
  const until = Date.now() + 1000
  while (Date.now() < until) {
    const next = await Promise.race([reader.read(), new Promise<null>((r) => setTimeout(() => r(null), 200))])
    if (next && !next.done) text += new TextDecoder().decode(next.value)
  }
  await reader.cancel()
  assert.ok(text.includes('server.connected'))
  assert.ok(text.endsWith('data: {"type":"half'), `unexpected bytes: ${JSON.stringify(text)}`)
})

proxy('closing the client event stream aborts the upstream request and logs 499 request_aborted', async () => {
  const res = await ctx.kit.req('/sidecar/event')
  const reader = res.body!.getReader()
  await reader.read()
  await reader.cancel()
  await eventually(() => ctx.fake.aborts.filter((p) => p === '/event').length > 0, 'upstream event stream cancel')
  await eventually(
    () => ctx.lines.some((l) => l.includes('"status":499') && l.includes('request_aborted')),
    '499 log line',
  )
})

proxy('over a real socket, a client that disconnects mid-stream or mid-body aborts the upstream', async () => {
  const listener = await serve({ host: '127.0.0.1', port: 0, fetch: ctx.kit.app.fetch })
  try {
    const base = `http://127.0.0.1:${listener.port}`
    const headers = { authorization: `Bearer ${ctx.kit.tokens.owner}` }
    for (const path of ['/event', '/slow-body']) {
      const before = ctx.fake.aborts.filter((p) => p === path).length
      const controller = new AbortController()
      const res = await fetch(`${base}/sidecar${path}?chunks=1000`, { headers, signal: controller.signal })
      const reader = res.body!.getReader()
      await reader.read()
      controller.abort()
      await reader.read().catch(() => {})
      await eventually(() => ctx.fake.aborts.filter((p) => p === path).length > before, `upstream abort of ${path}`)
    }
  } finally {
    await listener.stop()
  }
})

proxy('a dropped upstream event stream ends the client stream', async () => {
  const res = await ctx.kit.req('/sidecar/event?mode=drop')
  let text = ''
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) text += new TextDecoder().decode(chunk)
  assert.ok(text.includes('server.connected'))
})

proxy('a client abort before the sidecar answers is 499 request_aborted and aborts the upstream', async () => {
  const controller = new AbortController()
  setTimeout(() => controller.abort(), 100)
  const before = ctx.fake.aborts.filter((p) => p === '/stall').length
  const res = await ctx.kit.req('/sidecar/stall', { as: 'owner', signal: controller.signal })
  assert.is(res.status, 499)
  assert.is((await res.json()).code, 'request_aborted')
  await eventually(() => ctx.fake.aborts.filter((p) => p === '/stall').length > before, 'upstream abort')
})

proxy('a slow body streams chunk by chunk', async () => {
  const started = Date.now()
  const res = await ctx.kit.req('/sidecar/slow-body?chunks=6', { as: 'owner' })
  const reader = res.body!.getReader()
  const first = await reader.read()
  const firstAt = Date.now() - started
  assert.match(new TextDecoder().decode(first.value), /^chunk-0/)
  let rest = ''
  for (;;) {
    const next = await reader.read()
    if (next.done) break
    rest += new TextDecoder().decode(next.value)
  }
  assert.ok(rest.includes('chunk-5'))
  assert.ok(firstAt < Date.now() - started - 100, `first chunk at ${firstAt} ms was not earlier than the end`)
})

proxy('a body that stalls mid-way is cut after the idle timeout and the upstream aborted', async () => {
  const res = await ctx.kit.req('/sidecar/stall-body', { as: 'owner' })
  assert.is(res.status, 200)
  const reader = res.body!.getReader()
  assert.match(new TextDecoder().decode((await reader.read()).value), /first-part/)
  let failed = false
  try {
    await reader.read()
  } catch {
    failed = true
  }
  assert.ok(failed, 'the truncated body must end in an error, not a clean end')
  await eventually(() => ctx.fake.aborts.includes('/stall-body'), 'upstream cancel')
})

proxy('a body the upstream drops mid-way ends in an error rather than a clean end', async () => {
  const res = await ctx.kit.req('/sidecar/drop', { as: 'owner' })
  let failed = false
  try {
    await res.text()
  } catch {
    failed = true
  }
  assert.ok(failed)
})

proxy('a 50 MB body streams through with bounded memory, read only as fast as the client reads', async () => {
  const res = await ctx.kit.req('/sidecar/big?mb=50', { as: 'owner' })
  assert.is(res.headers.get('content-length'), null)
  const reader = res.body!.getReader()
  await reader.read()
  await new Promise((r) => setTimeout(r, 300))
  assert.ok(
    ctx.fake.bigBytesSent < 32 * 1024 * 1024,
    `upstream ran ahead of the client: ${ctx.fake.bigBytesSent} bytes`,
  )
  // Bytes the upstream has produced but the client has not yet read bound what the proxy can hold
  // (kernel socket buffers on loopback take several MB of it); a buffering proxy would reach 50 MB.
  let bytes = 0
  let maxInFlight = 0
  for (;;) {
    const next = await reader.read()
    if (next.done) break
    bytes += next.value.length
    maxInFlight = Math.max(maxInFlight, ctx.fake.bigBytesSent - bytes)
  }
  assert.ok(bytes > 49 * 1024 * 1024, `only ${bytes} bytes arrived`)
  assert.ok(
    maxInFlight < 32 * 1024 * 1024,
    `up to ${Math.round(maxInFlight / 1048576)} MB were held between upstream and client`,
  )
})

proxy('a 50 MB request body streams up to the sidecar intact', async () => {
  const total = 50 * 1024 * 1024
  const chunk = new Uint8Array(256 * 1024).map((_, i) => i % 251)
  const expected = createHash('sha256')
  let sent = 0
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent >= total) {
        controller.close()
        return
      }
      expected.update(chunk)
      sent += chunk.length
      controller.enqueue(chunk.slice())
    },
  })
  const res = await request(ctx.kit.app.fetch, '/sidecar/upload', {
    method: 'POST',
    body,
    headers: { authorization: `Bearer ${ctx.kit.tokens.owner}`, 'content-type': 'application/octet-stream' },
    duplex: 'half',
  } as RequestInit)
  assert.is(res.status, 200, res.status === 200 ? '' : await res.clone().text())
  assert.equal(await res.json(), { bytes: total, sha256: expected.digest('hex') })
})

proxy.run()

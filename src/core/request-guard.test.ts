/**
 * The listener's deadlines and caps, over a real socket (serve.ts + RequestGuard, Bun).
 */
import { assert, suite } from '../../tests/harness.ts'
import { rawConnect } from '../../tests/raw-socket.ts'
import { serve, type Listener } from '../serve.ts'
import { loadRequestLimits, openFileLimit } from './request-limits.ts'
import type { RequestLimits } from './request-limits.ts'
import { ConfigError } from './settings.ts'

const test = suite('core/request-guard', { timeoutMs: 40_000 })

const LIMITS: RequestLimits = {
  bodyIdleTimeoutSeconds: 1,
  idleTimeoutSeconds: 2,
  maxRequestsPerAddress: 3,
  maxRequests: 5,
}

/** A tiny app: POST reads the whole body; /events streams; /slow holds the answer. */
async function withServer(
  fn: (url: string, seen: { bodyErrors: string[] }) => Promise<void>,
  limits = LIMITS,
): Promise<void> {
  const seen = { bodyErrors: [] as string[] }
  const listener: Listener = await serve({
    host: '127.0.0.1',
    port: 0,
    limits,
    fetch: (request) => (new URL(request.url).pathname === '/sync' ? new Response('sync') : answer(request)),
  })
  async function answer(request: Request): Promise<Response> {
    {
      const path = new URL(request.url).pathname
      if (path === '/health') return new Response('{"ok":true}')
      if (path === '/events') {
        return new Response(new ReadableStream({ start: (c) => c.enqueue(new TextEncoder().encode(': hi\n\n')) }), {
          headers: { 'content-type': 'text/event-stream' },
        })
      }
      if (path === '/slow') await new Promise((r) => setTimeout(r, 4000))
      if (request.method === 'POST') {
        try {
          const text = await request.text()
          return new Response(`got ${text.length}`)
        } catch (error) {
          seen.bodyErrors.push((error as Error).name)
          throw error
        }
      }
      return new Response('ok')
    }
  }
  try {
    await fn(`http://127.0.0.1:${listener.port}`, seen)
  } finally {
    await listener.stop()
  }
}

const stalledPost = (path = '/upload') =>
  `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\nX-Request-Id: stall-1\r\n\r\n0123456789`

test('a body that stops arriving is answered 408 request_timeout in our shape and its socket is closed', async () => {
  await withServer(async (url, seen) => {
    const conn = await rawConnect(url, stalledPost())
    const closedAfter = await conn.closed(8000)
    assert.ok(closedAfter !== null, 'the stalled socket was closed')
    assert.ok(closedAfter! >= 900 && closedAfter! < 6000, `closed after ${closedAfter} ms`)
    const text = conn.received()
    assert.match(text, /^HTTP\/1\.1 408/)
    assert.match(text, /"code":"request_timeout"/)
    assert.match(text, /x-request-id: stall-1/i)
    await new Promise((r) => setTimeout(r, 100))
    assert.equal(seen.bodyErrors, ['BodyIdleTimeoutError'], 'the handler saw its read fail (and could clean up)')
  })
})

test('an upload that keeps sending slowly is not cut by either deadline', async () => {
  await withServer(async (url) => {
    const chunks = 12
    const conn = await rawConnect(url, `POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: ${chunks * 100}\r\n\r\n`)
    // 12 chunks 400 ms apart: 4.8 s in all, past both the 1 s body and the 2 s idle deadline.
    for (let i = 0; i < chunks; i++) {
      await new Promise((r) => setTimeout(r, 400))
      conn.socket.write('x'.repeat(100))
    }
    assert.ok(await conn.waitFor(`got ${chunks * 100}`, 5000), conn.received())
    conn.destroy()
  })
})

test('requests past the per-address cap get 503 server_busy with Retry-After while /health answers', async () => {
  await withServer(async (url) => {
    const held = await Promise.all([1, 2, 3].map(() => rawConnect(url, stalledPost())))
    await new Promise((r) => setTimeout(r, 200))
    const refused = await fetch(`${url}/anything`)
    assert.is(refused.status, 503)
    assert.is(refused.headers.get('retry-after'), '2')
    // No id offered: the refusal carries a fresh one, made like the app's.
    assert.match(refused.headers.get('x-request-id') ?? '', /^req_[0-9a-f]{16}[0-9a-z]{10}$/)
    assert.is((await refused.json()).code, 'server_busy')
    const health = await fetch(`${url}/health`)
    assert.is(health.status, 200)
    for (const conn of held) conn.destroy()
  })
})

test('a request answered synchronously takes no slot, yet is refused while its address holds the cap', async () => {
  await withServer(async (url) => {
    const get = (path: string) => `GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`
    // Two slow requests wait (cap 3 per address); a hundred synchronous answers in between hold no slot.
    const slow = await Promise.all([1, 2].map(() => rawConnect(url, get('/slow'))))
    await new Promise((r) => setTimeout(r, 200))
    for (let i = 0; i < 100; i++) assert.is(await (await fetch(`${url}/sync`)).text(), 'sync')
    // So a third waiting request still fits, and only then is the address at its cap, for both kinds.
    const third = await rawConnect(url, get('/slow'))
    await new Promise((r) => setTimeout(r, 200))
    for (const path of ['/sync', '/anything']) {
      const refused = await fetch(`${url}${path}`)
      assert.is(refused.status, 503, path)
      assert.is((await refused.json()).code, 'server_busy')
    }
    for (const conn of [...slow, third]) conn.destroy()
    // Slots come back once the waiting handlers finish (/slow answers after 4 s).
    await new Promise((r) => setTimeout(r, 4300))
    assert.is(await (await fetch(`${url}/sync`)).text(), 'sync')
  })
})

test('a keep-alive connection left idle is closed after the idle timeout, an event stream is not', async () => {
  await withServer(async (url) => {
    const idle = await rawConnect(url, 'GET /x HTTP/1.1\r\nHost: x\r\n\r\n')
    const stream = await rawConnect(url, 'GET /events HTTP/1.1\r\nHost: x\r\n\r\n')
    const closedAfter = await idle.closed(10_000)
    assert.ok(idle.received().startsWith('HTTP/1.1 200'))
    assert.ok(closedAfter !== null && closedAfter >= 1500, `idle keep-alive closed after ${closedAfter} ms`)
    await new Promise((r) => setTimeout(r, 2500))
    assert.is(stream.closedAfter(), null, 'the quiet event stream is still open')
    stream.destroy()
  })
})

test('a handler that takes longer than the idle timeout still answers', async () => {
  await withServer(async (url) => {
    const response = await fetch(`${url}/slow`)
    assert.is(await response.text(), 'ok')
  })
})

test('limits come from SERVICE_* variables, default from the descriptor limit, and never echo a bad value', () => {
  const defaults = loadRequestLimits({}, 256)
  assert.is(defaults.maxRequests, 192)
  assert.ok(defaults.bodyIdleTimeoutSeconds <= 30 && defaults.idleTimeoutSeconds <= 30)
  const set = loadRequestLimits({ SERVICE_BODY_IDLE_TIMEOUT: '5', SERVICE_MAX_REQUESTS_PER_ADDRESS: '7' }, null)
  assert.is(set.bodyIdleTimeoutSeconds, 5)
  assert.is(set.maxRequestsPerAddress, 7)
  assert.throws(
    () => loadRequestLimits({ SERVICE_IDLE_TIMEOUT: '300' }, null),
    (e: unknown) => e instanceof ConfigError,
  )
  assert.is(openFileLimit('Max open files            256                  4096                 files\n'), 256)
})

test.run()

/**
 * Client faults over a real socket (serve.ts + RequestGuard + the pipeline): a body that stops
 * arriving is one `info` line, not an error with a stack; a body the route never reads does not
 * cut the answer short when the client asked to close the connection (issue 29 §4, §6).
 */
import * as v from 'valibot'
import { assert, suite } from '../../tests/harness.ts'
import { rawConnect } from '../../tests/raw-socket.ts'
import { serve, type Listener } from '../serve.ts'
import { createHttpApp, type SurfaceAuth } from './http-app.ts'
import { createLogger } from './logger.ts'
import { routeFactory } from './route.ts'
import { MAX_GET_BODY_BYTES, MAX_UNREAD_BODY_BYTES } from './request-guard.ts'

const test = suite('core/client-faults', { timeoutMs: 40_000 })

type Rule = 'public'
const route = routeFactory<Rule, null>()
const auth: SurfaceAuth<Rule, null> = {
  authenticate: () => null,
  security: () => [],
  statuses: () => [],
}

/** 600 KB: more than the socket buffers hold, so a connection closed early shows as a short body. */
const BIG = 'x'.repeat(600_000)

async function withApp(fn: (url: string, lines: string[]) => Promise<void>): Promise<void> {
  const lines: string[] = []
  const app = createHttpApp({
    routes: [
      route({
        method: 'POST',
        path: '/items',
        operationId: 'createItem',
        summary: 's',
        auth: 'public',
        body: v.object({ name: v.string() }),
        responses: { 201: v.object({ name: v.string() }) },
        handler: ({ body }) => ({ name: body.name }),
      }),
      route({
        method: 'GET',
        path: '/big',
        operationId: 'big',
        summary: 's',
        auth: 'public',
        responses: { 200: { description: 'text', contentType: 'text/plain' } },
        handler: () => new Response(BIG),
      }),
      route({
        method: 'DELETE',
        path: '/big',
        operationId: 'deleteBig',
        summary: 's',
        auth: 'public',
        responses: { 200: { description: 'text', contentType: 'text/plain' } },
        handler: () => new Response(BIG),
      }),
    ],
    auth,
    validation: { status: 422, bodyCode: 'validation_failed', queryCode: 'validation_failed' },
    cors: { origins: [], allowHeaders: [], maxAgeSeconds: 0 },
    logger: createLogger({ format: 'json', write: (line) => lines.push(line) }),
  })
  const listener: Listener = await serve({
    host: '127.0.0.1',
    port: 0,
    fetch: app.fetch,
    limits: { bodyIdleTimeoutSeconds: 1, idleTimeoutSeconds: 5, maxRequestsPerAddress: 20, maxRequests: 50 },
  })
  try {
    await fn(`http://127.0.0.1:${listener.port}`, lines)
  } finally {
    await listener.stop()
  }
}

/** Sends `head` then `bodyBytes` bytes at once, waits for the close, and splits the answer. */
async function exchange(url: string, head: string, bodyBytes: number) {
  const conn = await rawConnect(url, head)
  if (bodyBytes > 0) conn.socket.write(Buffer.alloc(bodyBytes, 0x61))
  await conn.closed(10_000)
  conn.destroy()
  const text = conn.received()
  const split = text.indexOf('\r\n\r\n')
  const headers = text.slice(0, split)
  return {
    status: Number(headers.slice(9, 12)),
    declared: Number(/content-length: (\d+)/i.exec(headers)?.[1] ?? -1),
    body: text.slice(split + 4),
  }
}

test('a JSON body that stops arriving is answered 408 and logged as one info line, with no error and no stack', async () => {
  await withApp(async (url, lines) => {
    const conn = await rawConnect(
      url,
      'POST /items HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\nX-Request-Id: stall-7\r\n\r\n{"name":',
    )
    await conn.closed(8000)
    assert.match(conn.received(), /^HTTP\/1\.1 408/)
    assert.match(conn.received(), /"code":"request_timeout"/)
    await new Promise((r) => setTimeout(r, 100))
    const parsed = lines.map((line) => JSON.parse(line) as Record<string, unknown>)
    assert.equal(
      parsed.map((p) => [p.level, p.msg, p.requestId]),
      [['info', 'request body stopped arriving', 'stall-7']],
    )
    assert.not.match(lines.join('\n'), /stack|unhandled/)
  })
})

test('a GET carrying a 2 MiB body with Connection: close is refused 413 whole, and a small one is ignored', async () => {
  await withApp(async (url) => {
    const size = 2 * 1024 * 1024
    const refused = await exchange(
      url,
      `GET /big HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: ${size}\r\n\r\n`,
      size,
    )
    assert.is(refused.status, 413)
    assert.is(refused.body.length, refused.declared)
    assert.is(JSON.parse(refused.body).code, 'payload_too_large')
    assert.is(JSON.parse(refused.body).details.maxBytes, MAX_GET_BODY_BYTES)
    const chunked = await exchange(
      url,
      'GET /big HTTP/1.1\r\nHost: x\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n',
      0,
    )
    assert.is(chunked.status, 413)
    const small = await exchange(
      url,
      'GET /big HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}',
      0,
    )
    assert.is(small.status, 200)
    assert.is(small.body.length, BIG.length)
  })
})

test('a 2 MiB body the route never reads is skipped, so the answer arrives whole; past the limit it is 413', async () => {
  await withApp(async (url) => {
    const size = 2 * 1024 * 1024
    const whole = await exchange(
      url,
      `DELETE /big HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: ${size}\r\n\r\n`,
      size,
    )
    assert.is(whole.status, 200)
    assert.is(whole.declared, BIG.length)
    assert.is(whole.body.length, BIG.length)
    const over = MAX_UNREAD_BODY_BYTES + 1
    const refused = await exchange(
      url,
      `DELETE /big HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: ${over}\r\n\r\n`,
      0,
    )
    assert.is(refused.status, 413)
    assert.is(JSON.parse(refused.body).details.maxBytes, MAX_UNREAD_BODY_BYTES)
  })
})

test.run()

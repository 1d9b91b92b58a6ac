import * as v from 'valibot'
import { assert, request, suite } from '../../tests/harness.ts'
import { ApiError } from './errors.ts'
import { createHttpApp, NEVER_LOGGED_HEADERS, type SurfaceAuth } from './http-app.ts'
import { createLogger } from './logger.ts'
import { type AnyRoute, routeFactory } from './route.ts'
import { queryInt } from './validation.ts'
import { connect } from 'node:net'
import { serve } from '../serve.ts'

type Rule = 'public' | 'secret'
const route = routeFactory<Rule, { who: string }>()
const auth: SurfaceAuth<Rule, { who: string }> = {
  authenticate(req, rule) {
    if (rule === 'public') return { who: 'anyone' }
    if (req.headers.get('authorization') === 'Bearer right') return { who: 'caller' }
    throw new ApiError(401, 'unauthorized', 'nope')
  },
  security: (rule) => (rule === 'public' ? [] : [{ bearer: [] }]),
  statuses: (rule) => (rule === 'public' ? [] : [401]),
}

function makeApp(options: { cors?: string[]; lines?: string[] } = {}) {
  const lines = options.lines ?? []
  return createHttpApp({
    routes: [
      route({
        method: 'GET',
        path: '/items/:id',
        operationId: 'getItem',
        summary: 's',
        auth: 'public',
        responses: { 200: v.object({ id: v.string() }) },
        handler: ({ params }) => ({ id: params.id }),
      }),
      route({
        method: 'POST',
        path: '/items',
        operationId: 'createItem',
        summary: 's',
        auth: 'secret',
        body: v.object({
          name: v.pipe(v.string(), v.minLength(1)),
          tags: v.optional(v.array(v.string())),
          nested: v.optional(v.object({ n: v.number() })),
        }),
        responses: { 201: v.object({ name: v.string(), who: v.string() }) },
        handler: ({ body, principal }) => ({ name: body.name, who: principal.who }),
      }),
      route({
        method: 'GET',
        path: '/list',
        operationId: 'list',
        summary: 's',
        auth: 'public',
        query: v.object({ limit: queryInt({ min: 1, max: 100, default: 20 }) }),
        responses: { 200: v.object({ limit: v.number() }) },
        handler: ({ query }) => ({ limit: query.limit }),
      }),
      route({
        method: 'GET',
        path: '/boom',
        operationId: 'boom',
        summary: 's',
        auth: 'public',
        responses: { 200: v.object({}) },
        handler: () => {
          throw new Error('SQLITE_CONSTRAINT: secret internals /etc/passwd')
        },
      }),
      route({
        method: 'GET',
        path: '/slow',
        operationId: 'slow',
        summary: 's',
        auth: 'public',
        responses: { 200: v.object({}) },
        handler: async ({ request }) => {
          await new Promise((r) => setTimeout(r, 20))
          if (request.signal.aborted) throw new Error('upstream read failed')
          return {}
        },
      }),
      route({
        method: 'GET',
        path: '/echo',
        operationId: 'echo',
        summary: 's',
        auth: 'public',
        responses: { 200: { description: 'html' } },
        handler: ({ requestId }) =>
          new Response('<b>hi</b>', { headers: { 'content-type': 'text/html', 'x-request-id': requestId } }),
      }),
      route({
        method: 'GET',
        path: '/away',
        operationId: 'away',
        summary: 's',
        auth: 'public',
        responses: { 302: { description: 'elsewhere' } },
        handler: () => Response.redirect('http://example.test/', 302),
      }),
      route({
        method: 'DELETE',
        path: '/items/:id',
        operationId: 'deleteItem',
        summary: 's',
        auth: 'secret',
        responses: { 204: { description: 'gone' } },
        handler: () => undefined,
      }),
    ],
    auth,
    validation: { status: 422, bodyCode: 'validation_failed', queryCode: 'validation_failed' },
    cors: { origins: options.cors ?? [], allowHeaders: ['Authorization', 'Content-Type'], maxAgeSeconds: 900 },
    logger: createLogger({ format: 'json', write: (l) => lines.push(l) }),
    requestLog: true,
  })
}

const http = suite('core/http-app')

http('every response carries X-Request-Id, generated or echoed when well-formed', async () => {
  const app = makeApp()
  const generated = await request(app.fetch, '/items/1')
  assert.match(generated.headers.get('x-request-id') ?? '', /^req_[0-9a-z]{26}$/)
  const echoed = await request(app.fetch, '/items/1', { headers: { 'x-request-id': 'client-abc.1' } })
  assert.is(echoed.headers.get('x-request-id'), 'client-abc.1')
  const rejected = await request(app.fetch, '/items/1', { headers: { 'x-request-id': 'bad id\twith spaces' } })
  assert.match(rejected.headers.get('x-request-id') ?? '', /^req_/)
  const missing = await request(app.fetch, '/nope')
  assert.ok(missing.headers.get('x-request-id'))
})

http("a trailing slash reaches the same route, as in itty-router's own matching", async () => {
  const app = makeApp()
  for (const path of ['/list/', '/list//', '/items/7/']) {
    const res = await request(app.fetch, path)
    assert.is(res.status, 200, path)
  }
  assert.equal(await (await request(app.fetch, '/list/?limit=3')).json(), { limit: 3 })
})

http('responses a handler builds get nosniff even when they already carry our request id', async () => {
  const app = makeApp()
  const echoed = await request(app.fetch, '/echo', { headers: { 'x-request-id': 'trace-1' } })
  assert.is(echoed.headers.get('x-request-id'), 'trace-1')
  assert.is(echoed.headers.get('x-content-type-options'), 'nosniff')
  const redirect = await request(app.fetch, '/away') // Response.redirect() headers are immutable
  assert.is(redirect.status, 302)
  assert.ok(redirect.headers.get('x-request-id'))
  assert.is(redirect.headers.get('x-content-type-options'), 'nosniff')
})

http('a request target that is not a URL (invalid Host) is refused, not routed by a :// inside it', async () => {
  const app = makeApp()
  const listener = await serve({ host: '127.0.0.1', port: 0, fetch: app.fetch })
  try {
    const raw = (target: string, host: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = connect(listener.port, '127.0.0.1', () =>
          socket.write(`GET ${target} HTTP/1.1\r\nHost: ${host}\r\nX-Request-Id: raw-1\r\nConnection: close\r\n\r\n`),
        )
        let text = ''
        socket.on('data', (chunk) => {
          text += chunk
        })
        socket.on('end', () => resolve(text))
        socket.on('error', reject)
      })
    const sane = await raw('/nope/x://y/list', 'localhost')
    assert.match(sane, /^HTTP\/1\.1 404/, 'a valid Host routes the whole path: no such route')
    for (const target of ['/nope/x://y/list', '/nope?q://y/list', '/a/../list']) {
      const answer = await raw(target, 'bad/host')
      assert.match(answer, /^HTTP\/1\.1 400/, target)
      assert.match(answer, /invalid_request_target/)
      assert.match(answer, /x-request-id: raw-1/i)
      assert.match(answer, /x-content-type-options: nosniff/i)
    }
  } finally {
    await listener.stop()
  }
})

http('a defect outside routing still answers 500 with the offered request id and nosniff', async () => {
  const lines: string[] = []
  const app = makeApp({ lines })
  const broken = {
    method: 'GET',
    headers: new Headers({ 'x-request-id': 'trace-2' }),
    signal: new AbortController().signal,
    get url(): string {
      throw new Error('listener defect')
    },
  }
  const res = await app.fetch(broken as unknown as Request)
  assert.is(res.status, 500)
  assert.is(res.headers.get('x-request-id'), 'trace-2')
  assert.is(res.headers.get('x-content-type-options'), 'nosniff')
  assert.equal(await res.json(), { code: 'internal_error', message: 'Unexpected server error' })
})

http('path params are URL-decoded and malformed encodings are 404', async () => {
  const app = makeApp()
  assert.equal(await (await request(app.fetch, '/items/a%20b')).json(), { id: 'a b' })
  assert.equal(await (await request(app.fetch, '/items/%40acme%2Fextra')).json(), { id: '@acme/extra' })
  const bad = await request(app.fetch, '/items/%E0%A4%A')
  assert.is(bad.status, 404)
  assert.is((await bad.json()).code, 'not_found')
})

http('HEAD is answered like GET without a body', async () => {
  const app = makeApp()
  const res = await request(app.fetch, '/items/7', { method: 'HEAD' })
  assert.is(res.status, 200)
  assert.is(res.headers.get('content-type'), 'application/json; charset=utf-8')
  assert.is(await res.text(), '')
})

http('unknown paths are 404 not_found and known paths with another method are 405 with Allow', async () => {
  const app = makeApp()
  const missing = await request(app.fetch, '/nothing/here')
  assert.is(missing.status, 404)
  assert.equal(await missing.json(), { code: 'not_found', message: 'Not found' })
  const wrong = await request(app.fetch, '/items/1', { method: 'PUT' })
  assert.is(wrong.status, 405)
  assert.is((await wrong.json()).code, 'method_not_allowed')
  assert.match(wrong.headers.get('allow') ?? '', /GET.*HEAD.*DELETE|GET.*DELETE.*HEAD|DELETE.*GET/)
})

http('an unexpected exception becomes 500 internal_error with no internal text', async () => {
  const lines: string[] = []
  const app = makeApp({ lines })
  const res = await request(app.fetch, '/boom')
  assert.is(res.status, 500)
  const text = await res.text()
  assert.equal(JSON.parse(text), { code: 'internal_error', message: 'Unexpected server error' })
  assert.not.match(text, /SQLITE|passwd/)
  assert.ok(
    lines.some((l) => l.includes('SQLITE_CONSTRAINT')),
    'the cause is logged for operators',
  )
})

http('a failure after the client went away is 499 request_aborted, not a logged 500', async () => {
  const lines: string[] = []
  const app = makeApp({ lines })
  const controller = new AbortController()
  const pending = app.fetch(new Request('http://test.local/slow', { signal: controller.signal }))
  controller.abort()
  const res = await pending
  assert.is(res.status, 499)
  assert.is((await res.json()).code, 'request_aborted')
  assert.not.ok(lines.some((l) => l.includes('unhandled error')))
})

http('malformed JSON is 400 invalid_json and a non-object body is 400', async () => {
  const app = makeApp()
  const headers = { authorization: 'Bearer right', 'content-type': 'application/json' }
  const malformed = await request(app.fetch, '/items', { method: 'POST', headers, body: '{bad' })
  assert.is(malformed.status, 400)
  assert.is((await malformed.json()).code, 'invalid_json')
  const array = await request(app.fetch, '/items', { method: 'POST', headers, body: '[]' })
  assert.is(array.status, 400)
  assert.is((await array.json()).code, 'validation_failed')
})

http('a JSON body larger than the cap is refused with 413 even without a content-length', async () => {
  const app = makeApp()
  const chunk = new TextEncoder().encode('x'.repeat(1024 * 1024))
  let sent = 0
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent >= 64) return controller.close()
      sent++
      controller.enqueue(chunk)
    },
  })
  const res = await app.fetch(
    new Request('http://test.local/items', {
      method: 'POST',
      headers: { authorization: 'Bearer right', 'content-type': 'application/json' },
      body,
      duplex: 'half',
    } as RequestInit),
  )
  assert.is(res.status, 413)
  assert.is((await res.json()).code, 'payload_too_large')
  assert.ok(sent < 64, `reading stopped once the cap was passed (${sent} MiB pulled)`)
})

http('validation failures name every field path', async () => {
  const app = makeApp()
  const res = await request(app.fetch, '/items', {
    method: 'POST',
    headers: { authorization: 'Bearer right' },
    json: { name: '', tags: ['ok', 3], nested: { n: 'x' } },
  })
  assert.is(res.status, 422)
  const body = await res.json()
  assert.is(body.code, 'validation_failed')
  const paths = body.details.issues.map((i: { path: string }) => i.path).sort()
  assert.equal(paths, ['name', 'nested.n', 'tags.1'])
})

http('auth runs before validation and the declared success status is used', async () => {
  const app = makeApp()
  const anonymous = await request(app.fetch, '/items', { method: 'POST', json: { name: '' } })
  assert.is(anonymous.status, 401)
  const created = await request(app.fetch, '/items', {
    method: 'POST',
    headers: { authorization: 'Bearer right' },
    json: { name: 'x' },
  })
  assert.is(created.status, 201)
  assert.equal(await created.json(), { name: 'x', who: 'caller' })
  const deleted = await request(app.fetch, '/items/1', { method: 'DELETE', headers: { authorization: 'Bearer right' } })
  assert.is(deleted.status, 204)
  assert.is(await deleted.text(), '')
})

http('query parameters are validated with bounds and defaults', async () => {
  const app = makeApp()
  assert.equal(await (await request(app.fetch, '/list')).json(), { limit: 20 })
  assert.equal(await (await request(app.fetch, '/list?limit=5')).json(), { limit: 5 })
  for (const bad of ['0', '101', 'abc', '1.5']) {
    const res = await request(app.fetch, `/list?limit=${bad}`)
    assert.is(res.status, 422, `limit=${bad}`)
    assert.is((await res.json()).details.issues[0].path, 'limit')
  }
  const repeated = await request(app.fetch, '/list?limit=1&limit=2')
  assert.is(repeated.status, 422)
})

http('CORS is off by default: no headers, and preflights are refused', async () => {
  const app = makeApp()
  const res = await request(app.fetch, '/items/1', { headers: { origin: 'https://evil.example' } })
  assert.is(res.status, 200)
  assert.is(res.headers.get('access-control-allow-origin'), null)
  const pre = await request(app.fetch, '/items', {
    method: 'OPTIONS',
    headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' },
  })
  assert.is(pre.status, 403)
  assert.is(pre.headers.get('access-control-allow-origin'), null)
})

http('configured origins get CORS headers and cached preflights; others get none', async () => {
  const app = makeApp({ cors: ['https://app.example'] })
  const ok = await request(app.fetch, '/items/1', { headers: { origin: 'https://app.example' } })
  assert.is(ok.headers.get('access-control-allow-origin'), 'https://app.example')
  assert.match(ok.headers.get('vary') ?? '', /Origin/)
  const pre = await request(app.fetch, '/items', {
    method: 'OPTIONS',
    headers: {
      origin: 'https://app.example',
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'authorization',
    },
  })
  assert.is(pre.status, 204)
  assert.is(pre.headers.get('access-control-max-age'), '900')
  assert.match(pre.headers.get('access-control-allow-headers') ?? '', /Authorization/)
  const other = await request(app.fetch, '/items/1', { headers: { origin: 'https://other.example' } })
  assert.is(other.headers.get('access-control-allow-origin'), null)
  const wildcard = makeApp({ cors: ['*'] })
  const any = await request(wildcard.fetch, '/items/1', { headers: { origin: 'https://x.example' } })
  assert.is(any.headers.get('access-control-allow-origin'), '*')
})

http('the request log never prints credential header values', async () => {
  const lines: string[] = []
  const app = makeApp({ lines })
  await request(app.fetch, '/items', {
    method: 'POST',
    headers: {
      authorization: 'Bearer right',
      'x-api-key': 'svc_SECRETKEY',
      'x-service-host-token': 'HOSTSECRET',
      cookie: 'sid=COOKIESECRET',
    },
    json: { name: 'x' },
  })
  await request(app.fetch, '/items/1?token=QUERYSECRET')
  assert.ok(lines.length >= 2)
  const all = lines.join('\n')
  for (const secret of ['right', 'svc_SECRETKEY', 'HOSTSECRET', 'COOKIESECRET', 'QUERYSECRET'])
    assert.not.ok(all.includes(secret), `${secret} leaked`)
  assert.ok(NEVER_LOGGED_HEADERS.includes('x-api-key'))
  const entry = JSON.parse(lines[0]!)
  assert.equal([entry.method, entry.path, entry.status], ['POST', '/items', 201])
})

http('dot segments, literal or percent-encoded, never reach routing: 400 invalid_path in the error shape', async () => {
  const app = makeApp()
  for (const path of [
    '/items/x/%2e%2e',
    '/items/x/..',
    '/items/%2E%2e/x',
    '/items/x/.%2e',
    '/items/./x',
    '/list/%2e',
  ]) {
    // Request objects (and Bun's listener) resolve dot segments on construction; Deno's listener
    // hands the target over as sent, which is what this request-shaped object does.
    const asSent = {
      method: 'GET',
      url: `http://test.local${path}`,
      headers: new Headers({ 'x-request-id': 'dots-1' }),
      body: null,
      signal: new AbortController().signal,
    } as unknown as Request
    const res = await app.fetch(asSent)
    assert.is(res.status, 400, path)
    assert.is(res.headers.get('x-request-id'), 'dots-1')
    assert.is((await res.json()).code, 'invalid_path', path)
  }
  // A segment that merely contains dots is an ordinary id.
  assert.equal(await (await request(app.fetch, '/items/..x')).json(), { id: '..x' })
  assert.equal(await (await request(app.fetch, '/items/a.b')).json(), { id: 'a.b' })
})

http('ids are checked after decoding: a dot segment in an id, however encoded, is 404 not_found', async () => {
  const app = makeApp()
  for (const path of ['/items/a%2F..', '/items/%2E%2E%2fb', '/items/..%5Cb']) {
    const res = await request(app.fetch, path)
    assert.is(res.status, 404, path)
    assert.is((await res.json()).code, 'not_found')
  }
  assert.equal(await (await request(app.fetch, '/items/a%20b')).json(), { id: 'a b' })
})

/** A surface with one `direct` route, as the listener would serve it. */
function directApp(options: { cors?: string[]; requestLog?: boolean; declared?: AnyRoute<Rule> } = {}) {
  return createHttpApp({
    routes: [
      options.declared ??
        route({
          method: 'GET',
          path: '/health',
          operationId: 'health',
          summary: 's',
          auth: 'public',
          responses: { 200: v.object({ ok: v.boolean() }) },
          direct: true,
          handler: () => ({ ok: true }),
        }),
    ],
    auth,
    validation: { status: 422, bodyCode: 'validation_failed', queryCode: 'validation_failed' },
    cors: { origins: options.cors ?? [], allowHeaders: ['Authorization'] },
    logger: createLogger({ format: 'json', write: () => {} }),
    requestLog: options.requestLog ?? false,
  })
}

http(
  "a direct route answered by the listener's router matches the pipeline's answer, and only GET and HEAD on its path take it",
  async () => {
    const app = directApp()
    assert.equal(
      app.direct.map((d) => d.path),
      ['/health'],
    )
    const taken: string[] = []
    const direct = app.direct.map((d) => ({
      path: d.path,
      fetch: (request: Request) => {
        taken.push(`${request.method} ${new URL(request.url).pathname}`)
        return d.fetch(request)
      },
    }))
    const listener = await serve({ host: '127.0.0.1', port: 0, fetch: app.fetch, direct })
    try {
      const base = `http://127.0.0.1:${listener.port}`
      const fast = await fetch(`${base}/health?probe=1`)
      const piped = await fetch(`${base}/health/`)
      assert.is(fast.status, 200)
      assert.equal(await fast.json(), await piped.json())
      const names = (res: Response) =>
        [...res.headers.keys()].filter((name) => name !== 'date' && name !== 'content-length')
      assert.equal(names(fast), names(piped))
      assert.match(fast.headers.get('x-request-id') ?? '', /^req_[0-9a-z]{26}$/)
      assert.is(fast.headers.get('x-content-type-options'), 'nosniff')
      const echoed = await fetch(`${base}/health`, { headers: { 'x-request-id': 'probe-7' } })
      assert.is(echoed.headers.get('x-request-id'), 'probe-7')
      await echoed.text()
      const head = await fetch(`${base}/health`, { method: 'HEAD' })
      assert.is(head.status, 200)
      assert.is(await head.text(), '')
      const post = await fetch(`${base}/health`, { method: 'POST' })
      assert.is(post.status, 405)
      assert.is((await post.json()).code, 'method_not_allowed')
      // Bun's router answers a HEAD through the GET handler and drops the body itself.
      assert.match(head.headers.get('x-request-id') ?? '', /^req_/)
      assert.equal(taken, ['GET /health', 'GET /health', 'HEAD /health'])
    } finally {
      await listener.stop()
    }
  },
)

http('direct is refused on a route with inputs, and no route is direct while CORS or the request log is on', () => {
  assert.throws(
    () =>
      directApp({
        declared: route({
          method: 'GET',
          path: '/items/:id',
          operationId: 'getItem',
          summary: 's',
          auth: 'public',
          responses: { 200: v.object({}) },
          direct: true,
          handler: () => ({}),
        }),
      }),
    /only a GET on a fixed path with no inputs can be direct/,
  )
  assert.is(directApp({ cors: ['https://app.example'] }).direct.length, 0)
  assert.is(directApp({ requestLog: true }).direct.length, 0)
})

http.run()

/**
 * The SDK's hand-written transport helpers against a real HTTP peer (node:http): idempotency keys
 * and 503 retries, and SSE resumption with `Last-Event-ID` after the connection drops.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { followEvents, resilientFetch, ServiceApiError } from '../../sdk/src/index.ts'
import { assert, suite } from '../harness.ts'

const test = suite('sdk/helpers')

async function withServer(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
  fn: (url: string) => Promise<void>,
): Promise<void> {
  const server = createServer(handler)
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done))
  try {
    await fn(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)
  } finally {
    server.closeAllConnections()
    await new Promise((done) => server.close(done))
  }
}

test('a write carries a fresh Idempotency-Key and its 503 retry sends the same key and body; reads carry none', async () => {
  const seen: Array<{ method: string; key: string | undefined; body: string }> = []
  await withServer(
    (req, res) => {
      let body = ''
      req.on('data', (chunk) => {
        body += chunk
      })
      req.on('end', () => {
        seen.push({ method: req.method!, key: req.headers['idempotency-key'] as string | undefined, body })
        const busy = seen.filter((s) => s.method === req.method).length === 1
        res.writeHead(busy ? 503 : 200, busy ? { 'retry-after': '0' } : { 'content-type': 'application/json' })
        res.end(busy ? '' : '{}')
      })
    },
    async (url) => {
      const fetch = resilientFetch()
      const write = await fetch(`${url}/w`, { method: 'POST', body: '{"a":1}' })
      assert.is(write.status, 200)
      const second = await fetch(`${url}/w`, { method: 'POST', body: '{"a":2}' })
      assert.is(second.status, 200)
      const read = await fetch(`${url}/r`)
      assert.is(read.status, 200)
      const posts = seen.filter((s) => s.method === 'POST')
      assert.is(posts.length, 3)
      assert.match(posts[0]!.key ?? '', /^[0-9a-f-]{36}$/)
      assert.is(posts[1]!.key, posts[0]!.key, 'the retry reuses the key')
      assert.equal([posts[0]!.body, posts[1]!.body], ['{"a":1}', '{"a":1}'])
      assert.is.not(posts[2]!.key, posts[0]!.key, 'a new write gets a new key')
      assert.is(seen.find((s) => s.method === 'GET')!.key, undefined)
    },
  )
})

test('a stream that drops is resumed with Last-Event-ID, without losing or repeating events; a 401 ends it', async () => {
  const resumedFrom: Array<string | undefined> = []
  await withServer(
    (req, res) => {
      if (req.url === '/denied') {
        res.writeHead(401, { 'content-type': 'application/json' })
        res.end('{"code":"unauthorized","message":"Invalid or expired session"}')
        return
      }
      const last = req.headers['last-event-id'] as string | undefined
      resumedFrom.push(last)
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      if (last === undefined) {
        res.write(': heartbeat\n\nid: 1\nevent: a\ndata: {"n":1}\n\n')
        // The connection ends (a restart, a proxy's idle timeout) after two events.
        res.end('id: 2\nevent: a\ndata: {"n":2}\n\n')
      } else res.write(`retry: 10\n\nid: ${Number(last) + 1}\nevent: b\ndata: {"n":${Number(last) + 1}}\n\n`)
    },
    async (url) => {
      const abort = new AbortController()
      const got: Array<[string | null, string, number]> = []
      for await (const event of followEvents<{ n: number }>({
        url: `${url}/feed`,
        signal: abort.signal,
        reconnectDelayMs: 10,
      })) {
        got.push([event.id, event.event, event.data.n])
        if (got.length === 3) abort.abort()
      }
      assert.equal(got, [
        ['1', 'a', 1],
        ['2', 'a', 2],
        ['3', 'b', 3],
      ])
      assert.equal(resumedFrom, [undefined, '2'])
      let error: unknown
      try {
        for await (const _ of followEvents({ url: `${url}/denied` })) break
      } catch (caught) {
        error = caught
      }
      assert.instance(error, ServiceApiError)
      assert.equal([(error as ServiceApiError).status, (error as ServiceApiError).code], [401, 'unauthorized'])
    },
  )
})

test.run()

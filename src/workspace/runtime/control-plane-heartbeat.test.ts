/**
 * The workspace side of Worker heartbeats: off without its environment, posts the activity token
 * to the Worker's heartbeat route, keeps going through failures, and stops on a 409.
 */
import { createServer } from 'node:http'
import { assert, suite } from '../../../tests/harness.ts'
import { silentLogger } from '../../core/logger.ts'
import { startControlPlaneHeartbeat } from './control-plane-heartbeat.ts'

const test = suite('workspace/control-plane-heartbeat')

test('without all three variables nothing is reported', () => {
  assert.is(startControlPlaneHeartbeat({}, { logger: silentLogger, version: '1' }), null)
  assert.is(
    startControlPlaneHeartbeat(
      { SERVICE_CONTROL_PLANE_URL: 'http://127.0.0.1:9', SERVICE_WORKER_ID: 'wrk_x' },
      { logger: silentLogger, version: '1' },
    ),
    null,
  )
})

test('beats carry the activity token and a fresh Idempotency-Key each to the Worker route, survive failures, and stop on 409', async () => {
  const seen: Array<{ url: string; auth: string | undefined; key: string | undefined; body: string }> = []
  let answer = 500
  const server = createServer((req, res) => {
    let body = ''
    req.on('data', (d) => {
      body += d
    })
    req.on('end', () => {
      const key = req.headers['idempotency-key']
      seen.push({
        url: req.url ?? '',
        auth: req.headers.authorization,
        key: typeof key === 'string' ? key : undefined,
        body,
      })
      res.writeHead(answer, { 'content-type': 'application/json' })
      res.end('{}')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as { port: number }).port
  const reporter = startControlPlaneHeartbeat(
    {
      SERVICE_CONTROL_PLANE_URL: `http://127.0.0.1:${port}/`,
      SERVICE_WORKER_ID: 'wrk_abc',
      SERVICE_WORKER_ACTIVITY_TOKEN: 'wka_token',
      SERVICE_WORKER_HEARTBEAT_INTERVAL_MS: '60',
    },
    { logger: silentLogger, version: '9.9.9' },
  )
  try {
    assert.ok(reporter)
    const deadline = Date.now() + 3000
    while (seen.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20))
    assert.ok(seen.length >= 2, 'keeps beating after a failed beat')
    assert.is(seen[0]!.url, '/v1/workers/wrk_abc/heartbeat')
    assert.is(seen[0]!.auth, 'Bearer wka_token')
    assert.is(JSON.parse(seen[0]!.body).version, '9.9.9')
    assert.match(seen[0]!.key ?? '', /^[0-9a-f-]{36}$/)
    assert.ok(seen[0]!.key !== seen[1]!.key, 'one key per beat')
    answer = 409
    assert.is(await reporter!.beat(), 409)
    const count = seen.length
    await new Promise((r) => setTimeout(r, 250))
    assert.is(seen.length, count, 'no beats after a 409')
  } finally {
    reporter?.stop()
    server.closeAllConnections?.()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  }
})

test.run()

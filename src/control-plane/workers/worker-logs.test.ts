/**
 * `GET /v1/workers/:id/logs` with the real `process` provisioner (a child `service-server --mode
 * workspace`), and the runtime log file it writes: bounded reads, redaction, rotation at the cap.
 */
import { statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { assert, suite, tempDir, withTempDir } from '../../../tests/harness.ts'
import { silentLogger } from '../../core/logger.ts'
import { startAsyncTestPlane, waitFor } from '../testing/async-test-kit.ts'
import { buildFixtureOrg } from '../testing/org-fixture.ts'
import { ProcessProvisioner } from './process-provisioner.ts'
import {
  boundLogLines,
  CUT_MARK,
  LOG_LINE_MAX,
  redactSecrets,
  RUNTIME_LOG,
  RUNTIME_LOG_ROTATED,
  tailRuntimeLog,
} from './runtime-log.ts'

const test = suite('control-plane/worker-logs', { timeoutMs: 60_000 })

test("a Worker's logs show its start line, honour tail, hide its tokens and console code, need workers.manage, and end with the Worker", async () => {
  const t = await startAsyncTestPlane({ listen: true })
  try {
    const org = await buildFixtureOrg(t.client, 'wlog')
    const created = await t.client.post('/v1/workers', {
      token: org.admin.token,
      json: { name: 'builder', provisioner: 'process' },
    })
    assert.is(created.status, 202)
    const id: string = created.body.item.id
    const issued = await t.client.post(`/v1/workers/${id}/tokens`, { token: org.owner.token })
    assert.is(issued.status, 201)
    const tokens: Record<string, string> = issued.body.item.tokens
    const ready = await waitFor(
      () => t.client.get(`/v1/workers/${id}/runtime`, { token: org.admin.token }),
      (r) => r.body.item.state === 'healthy' && r.body.item.url !== null,
      20_000,
      50,
    )
    assert.is(ready.body.item.state, 'healthy')

    const logs = await t.client.get(`/v1/workers/${id}/logs`, { token: org.admin.token })
    assert.is(logs.status, 200)
    const lines: string[] = logs.body.lines
    assert.ok(
      lines.some((line) => /workspace listening on http:\/\/127\.0\.0\.1:\d+/.test(line)),
      `the start line is there: ${lines.join('\n')}`,
    )
    assert.ok(lines.some((line) => /control plane: starting the runtime \(generation \d+\)/.test(line)))
    assert.is(logs.body.truncated, false)
    const text = JSON.stringify(logs.body)
    for (const value of Object.values(tokens)) assert.not.ok(text.includes(value), 'no token in the logs')
    const consoleLine = lines.find((line) => line.includes('console (one-time link'))
    assert.ok(consoleLine, 'the console line is kept')
    assert.match(consoleLine!, /#code=\[redacted\]/, 'its one-time code is not')

    const two = await t.client.get(`/v1/workers/${id}/logs?tail=2`, { token: org.admin.token })
    assert.is(two.status, 200)
    assert.is(two.body.lines.length, 2)
    assert.equal(two.body.lines, lines.slice(-2), 'the newest two, oldest first')
    for (const tail of ['0', '1001', 'x'])
      assert.is((await t.client.get(`/v1/workers/${id}/logs?tail=${tail}`, { token: org.admin.token })).status, 422)

    const member = await t.client.get(`/v1/workers/${id}/logs`, { token: org.member.token })
    assert.is(member.status, 403, 'a member without workers.manage cannot read them')

    // A row recorded on another host: this instance cannot read that host's file.
    const host = (await t.app.deps.db
      .selectFrom('worker')
      .select('runtime_host')
      .where('id', '=', id)
      .executeTakeFirst())!
    await t.app.deps.db.updateTable('worker').set({ runtime_host: 'elsewhere.example' }).where('id', '=', id).execute()
    const elsewhere = await t.client.get(`/v1/workers/${id}/logs`, { token: org.admin.token })
    assert.is(elsewhere.status, 409)
    assert.is(elsewhere.body.code, 'worker_runtime_elsewhere')
    assert.is(elsewhere.body.details.host, 'elsewhere.example')
    await t.app.deps.db.updateTable('worker').set({ runtime_host: host.runtime_host }).where('id', '=', id).execute()

    assert.is((await t.client.delete(`/v1/workers/${id}`, { token: org.admin.token })).status, 204)
    const gone = await t.client.get(`/v1/workers/${id}/logs`, { token: org.admin.token })
    assert.is(gone.status, 404)
    assert.is(gone.body.code, 'worker_not_found')
  } finally {
    await t.close()
  }
})

/** A stand-in runtime: announces a URL, then writes numbered lines quickly until stopped. */
const CHATTY = `
console.log('service-server 0 workspace listening on http://127.0.0.1:1')
let n = 0
const pad = 'x'.repeat(90)
setInterval(() => { for (let i = 0; i < 50; i++) console.error('line ' + ++n + ' ' + pad) }, 5)
`

test('a runtime that writes without end keeps its log files under the cap, and the tail is its newest lines', async () => {
  const dir = tempDir('svc-wlog-')
  const cap = 16 * 1024
  const provisioner = new ProcessProvisioner({
    dataDir: dir.path,
    logger: silentLogger,
    command: [process.execPath, '-e', CHATTY],
    logCapBytes: cap,
    logCheckMs: 20,
  })
  try {
    await provisioner.start({
      workerId: 'wrk_chatty',
      orgId: 'org_x',
      name: 'chatty',
      credentials: { client: 'c', host: 'h', activity: 'a' },
      controlPlaneUrl: 'http://127.0.0.1:1',
      heartbeatIntervalMs: 1000,
      generation: 1,
      signal: new AbortController().signal,
    })
    const root = join(dir.path, 'wrk_chatty')
    let rotated = false
    let most = 0
    const until = Date.now() + 1500
    while (Date.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, 10))
      const size = statSync(join(root, RUNTIME_LOG)).size
      most = Math.max(most, size)
      try {
        rotated ||= statSync(join(root, RUNTIME_LOG_ROTATED)).size > 0
      } catch {
        // not rotated yet
      }
    }
    assert.ok(rotated, 'the log was rotated')
    // Checks run every 20 ms (later on a busy machine): the live file overshoots the cap by what
    // was written in between, far from everything written.
    const written = Number(/^line (\d+) /.exec((await provisioner.logs('wrk_chatty', 1)).lines[0]!)?.[1]) * 100
    assert.ok(most < cap * 8, `the live log stayed bounded (${most} bytes at most, cap ${cap})`)
    assert.ok(written > most * 3, `far less on disk (${most}) than written (${written})`)
    assert.ok(statSync(join(root, RUNTIME_LOG_ROTATED)).size <= cap, 'the rotated part is at most the cap')
    const { lines } = await provisioner.logs('wrk_chatty', 50)
    assert.is(lines.length, 50)
    const numbers = lines.map((line) => Number(/^line (\d+) /.exec(line)?.[1]))
    for (let i = 1; i < numbers.length; i++) assert.is(numbers[i], numbers[i - 1]! + 1, 'consecutive, oldest first')
    await provisioner.stop('wrk_chatty')
    const last = Number(/^line (\d+) /.exec((await provisioner.logs('wrk_chatty', 1)).lines[0]!)?.[1])
    assert.ok(last >= numbers.at(-1)!, 'the output outlives the runtime')
  } finally {
    await provisioner.close()
    dir.remove()
  }
})

test('the tail reads across the rotated part and chunk borders, cuts long lines and redacts secrets', async () => {
  await withTempDir((dir) => {
    const older = Array.from({ length: 3000 }, (_, i) => `old ${i}`)
    const newer = Array.from({ length: 5000 }, (_, i) => `new ${i} ${'y'.repeat(i % 40)}`)
    writeFileSync(join(dir, RUNTIME_LOG_ROTATED), `${older.join('\n')}\n`)
    writeFileSync(join(dir, RUNTIME_LOG), `${newer.join('\n')}\n`)
    assert.equal(tailRuntimeLog(dir, 3).lines, newer.slice(-3))
    const across = tailRuntimeLog(dir, 5010)
    assert.equal(across.lines, [...older.slice(-10), ...newer])
    assert.is(across.truncated, false)
    assert.equal(tailRuntimeLog(join(dir, 'none'), 10), { lines: [], truncated: false })

    // One line far over the byte budget: the read stops, and says so.
    writeFileSync(join(dir, RUNTIME_LOG), `first\n${'z'.repeat(700 * 1024)}\nlast`)
    const huge = tailRuntimeLog(dir, 3)
    assert.equal(huge.lines, ['last'], 'a line without its start is not answered')
    assert.is(huge.truncated, true)

    const bounded = boundLogLines({ lines: ['a', 'b'.repeat(LOG_LINE_MAX + 10)], truncated: false }, 5)
    assert.is(bounded.lines[1], 'b'.repeat(LOG_LINE_MAX) + CUT_MARK)
    assert.is(bounded.truncated, true)
    const many = boundLogLines({ lines: Array.from({ length: 400 }, () => 'q'.repeat(1000)), truncated: false }, 400)
    assert.ok(many.lines.length < 400 && many.truncated, 'the answer stays under its byte bound')
  })
  const token = 'wkc_Ab3dEfGhIjKlMnOpQrStUvWxYz0123456789-_abcd'
  assert.is(redactSecrets(`client ${token} end`), 'client [redacted] end')
  assert.is(redactSecrets('Authorization: Bearer abc.def'), 'Authorization: Bearer [redacted]')
  assert.is(
    redactSecrets('open http://127.0.0.1:5/console#code=svc_once_Zz9'),
    'open http://127.0.0.1:5/console#code=[redacted]',
  )
  assert.is(redactSecrets('random Q2hlY2tUaGlzT3V0MTIzNDU2Nzg5MGFiY2RlZg here'), 'random [redacted] here')
  const kept =
    'worker wrk_01JD8Y2Q6G4W8ZKX5N3P7R9T1V digest e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'
  assert.is(redactSecrets(kept), kept, 'ids and hex digests are kept')
})

test.run()

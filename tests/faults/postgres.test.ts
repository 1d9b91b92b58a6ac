/**
 * PostgreSQL faults against a real control-plane process (`bun bin/service-server.ts`):
 * unreachable at start (exit 2 naming host, port and what failed, never the password); the
 * connection cut under write load (503 `database_unavailable` with Retry-After, `/health` still
 * answering and saying so, every acknowledged create still there afterwards, nothing half-written,
 * recovery without a restart once the database is back); a statement held past the statement
 * timeout by a lock (503, not a hang).
 *
 * The shared PostgreSQL server is never stopped: a TCP relay between the instance and PostgreSQL
 * is cut instead. Each test creates its own database and drops it.
 */
import { createServer, connect, type Server, type Socket } from 'node:net'
import { join, resolve } from 'node:path'
import { writeFileSync } from 'node:fs'
import pg from 'pg'
import { assert, BUN, runCommand, startChild, suite, tempDir, type ChildServer } from '../harness.ts'

const root = resolve(import.meta.dirname, '../..')
const entry = join(root, 'bin', 'service-server.ts')
const test = suite('faults/postgres', { timeoutMs: 120_000 })

const SERVER = new URL(process.env.SERVICE_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres')
const PASSWORD = 'fault-S3cret-pw'

/** A database URL through `port` (the relay, or PostgreSQL itself), with a password that must never show. */
function urlFor(database: string, port = Number(SERVER.port || 5432)): string {
  const url = new URL(SERVER.toString())
  url.hostname = '127.0.0.1'
  url.port = String(port)
  url.pathname = `/${database}`
  url.password = PASSWORD
  return url.toString()
}

async function admin<T>(work: (c: pg.Client) => Promise<T>, database?: string): Promise<T> {
  const url = new URL(SERVER.toString())
  if (database) url.pathname = `/${database}`
  const client = new pg.Client({ connectionString: url.toString() })
  await client.connect()
  try {
    return await work(client)
  } finally {
    await client.end()
  }
}

async function withDatabase<T>(work: (name: string) => Promise<T>): Promise<T> {
  const name = `svc_fault_${process.pid}_${Date.now().toString(36)}`
  await admin((c) => c.query(`create database ${name}`))
  try {
    return await work(name)
  } finally {
    await admin((c) => c.query(`drop database if exists ${name} with (force)`))
  }
}

/** A TCP relay to PostgreSQL that can be cut (open connections reset, new ones closed at once) and restored. */
async function tcpRelay(targetPort: number) {
  const sockets = new Set<Socket>()
  let up = true
  const server: Server = createServer((client) => {
    if (!up) {
      client.destroy()
      return
    }
    const upstream = connect(targetPort, '127.0.0.1')
    sockets.add(client)
    sockets.add(upstream)
    const end = () => {
      client.destroy()
      upstream.destroy()
      sockets.delete(client)
      sockets.delete(upstream)
    }
    client.on('error', end).on('close', end)
    upstream.on('error', end).on('close', end)
    client.pipe(upstream)
    upstream.pipe(client)
  })
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done))
  return {
    port: (server.address() as { port: number }).port,
    cut() {
      up = false
      for (const socket of sockets) socket.destroy()
      sockets.clear()
    },
    restore() {
      up = true
    },
    close: () =>
      new Promise<void>((done) => {
        up = false
        for (const socket of sockets) socket.destroy()
        server.close(() => done())
      }),
  }
}

/** A port nothing listens on (bound, then released). */
async function closedPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done))
  const { port } = server.address() as { port: number }
  await new Promise<void>((done) => server.close(() => done()))
  return port
}

function startPlane(dir: string, databaseUrl: string, env: Record<string, string> = {}): Promise<ChildServer> {
  const config = join(dir, 'config.json')
  writeFileSync(config, JSON.stringify({ openSignUp: true, logRequests: false }))
  return startChild(BUN, [entry, '--mode', 'control-plane', '--port', '0', '--data-dir', dir, '--config', config], {
    env: { SERVICE_DATABASE_URL: databaseUrl, ...env },
    timeoutMs: 30_000,
  })
}

async function call(base: string, path: string, init: { method?: string; token?: string; json?: unknown } = {}) {
  const headers: Record<string, string> = {}
  if (init.token) headers.authorization = `Bearer ${init.token}`
  if (init.json !== undefined) headers['content-type'] = 'application/json'
  const res = await fetch(`${base}${path}`, {
    method: init.method ?? (init.json !== undefined ? 'POST' : 'GET'),
    headers,
    body: init.json !== undefined ? JSON.stringify(init.json) : undefined,
    signal: AbortSignal.timeout(30_000),
  })
  const text = await res.text()
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined }
}

async function owner(base: string): Promise<string> {
  const signUp = await call(base, '/v1/auth/sign-up', {
    json: { email: 'owner@faults.test', password: 'a long enough password', name: 'Owner' },
  })
  assert.is(signUp.status, 201, JSON.stringify(signUp.body))
  const token = signUp.body.session.token as string
  assert.is((await call(base, '/v1/orgs', { token, json: { name: 'Faults' } })).status, 201)
  return token
}

test('PostgreSQL unreachable at start: exit 2 naming host, port and what failed, never the password', async () => {
  const dir = tempDir('svc-fault-pg-')
  const relay = await tcpRelay(Number(SERVER.port || 5432))
  try {
    const port = await closedPort()
    const refused = await runCommand(
      BUN,
      [entry, '--mode', 'control-plane', '--port', '0', '--data-dir', dir.path, '--database-url', urlFor('nope', port)],
      { timeoutMs: 30_000 },
    )
    assert.is(refused.code, 2, refused.stderr)
    assert.match(refused.stderr, new RegExp(`PostgreSQL at 127\\.0\\.0\\.1:${port}/nope is not usable: ECONNREFUSED`))
    // A server that accepts and hangs up at once, and a database that does not exist.
    relay.cut()
    const dropped = await runCommand(BUN, [entry, '--mode', 'control-plane', '--port', '0', '--data-dir', dir.path], {
      env: { SERVICE_DATABASE_URL: urlFor('postgres', relay.port) },
      timeoutMs: 30_000,
    })
    assert.is(dropped.code, 2, dropped.stderr)
    assert.match(
      dropped.stderr,
      new RegExp(`127\\.0\\.0\\.1:${relay.port}/postgres is not usable: .*(terminated|ended|closed|ECONNRESET)`, 'i'),
    )
    const missing = await runCommand(BUN, [entry, '--mode', 'control-plane', '--port', '0', '--data-dir', dir.path], {
      env: { SERVICE_DATABASE_URL: urlFor(`svc_fault_missing_${process.pid}`) },
      timeoutMs: 30_000,
    })
    assert.is(missing.code, 2, missing.stderr)
    assert.match(missing.stderr, /is not usable: database "svc_fault_missing_\d+" does not exist/)
    for (const run of [refused, dropped, missing]) {
      assert.not.ok(`${run.stdout}${run.stderr}`.includes(PASSWORD), 'the password is never printed')
      assert.is(run.stdout, '', 'nothing claims to listen')
    }
  } finally {
    await relay.close()
    dir.remove()
  }
})

test('the connection cut under write load: 503 with Retry-After, /health says so, no acknowledged write lost, recovery without a restart', async () => {
  await withDatabase(async (name) => {
    const dir = tempDir('svc-fault-pg-')
    const relay = await tcpRelay(Number(SERVER.port || 5432))
    let plane: ChildServer | undefined
    try {
      plane = await startPlane(dir.path, urlFor(name, relay.port), { SERVICE_DATABASE_POOL_SIZE: '4' })
      const base = plane.url
      const token = await owner(base)
      assert.equal((await call(base, '/health')).body.database, 'ok')

      const acknowledged: string[] = []
      const statuses = new Map<number, number>()
      const unavailable: Array<{ retryAfter: string | null; code: string }> = []
      let phase: 'before' | 'cut' | 'after' = 'before'
      let createdAfter = 0
      let running = true
      let sequence = 0
      const writer = async () => {
        while (running) {
          const n = sequence++
          const res = await call(base, '/v1/config-objects', {
            token,
            json: { type: 'command', sourceMode: 'cloud', title: `Load ${n}`, input: { rawSourceText: `Do ${n}` } },
          }).catch((error: Error) => ({ status: 0, headers: new Headers(), body: { code: error.message } }))
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1)
          if (res.status === 201) {
            acknowledged.push(res.body.item.id)
            if (phase === 'after') createdAfter++
          } else if (res.status === 503) {
            unavailable.push({ retryAfter: res.headers.get('retry-after'), code: res.body?.code })
            // A client honours Retry-After; a short pause keeps this loop from spinning.
            await new Promise((r) => setTimeout(r, 50))
          }
        }
      }
      const writers = Array.from({ length: 4 }, writer)
      await waitUntil(() => acknowledged.length >= 20, 20_000, 'writes before the cut')

      relay.cut()
      phase = 'cut'
      const beforeCut = acknowledged.length
      await waitUntil(() => unavailable.length >= 8, 20_000, '503s while cut')
      // The probe runs at most once a second, so /health may still hold the last good answer briefly.
      let health = await call(base, '/health')
      const deadline = Date.now() + 5_000
      while (health.body?.database !== 'unavailable' && Date.now() < deadline) {
        assert.is(health.status, 200, '/health answers while the database is away')
        await new Promise((resolve) => setTimeout(resolve, 200))
        health = await call(base, '/health')
      }
      assert.is(health.status, 200, '/health answers while the database is away')
      assert.is(health.body.database, 'unavailable')
      assert.ok(acknowledged.length - beforeCut <= 4, 'at most the writes in flight at the cut were acknowledged')

      relay.restore()
      phase = 'after'
      await waitUntil(() => createdAfter >= 20, 30_000, 'writes after the database returned')
      running = false
      await Promise.all(writers)

      assert.ok(plane.process.exitCode === null, 'the same process served throughout')
      // As above: the last probe's answer may be up to a second old.
      let recovered = await call(base, '/health')
      for (const until = Date.now() + 5_000; recovered.body?.database !== 'ok' && Date.now() < until; ) {
        await new Promise((resolve) => setTimeout(resolve, 200))
        recovered = await call(base, '/health')
      }
      assert.equal(recovered.body.database, 'ok')
      for (const status of statuses.keys()) assert.ok([201, 503].includes(status), `unexpected status ${status}`)
      for (const answer of unavailable) {
        // A cut while COMMIT was on its way is not "nothing was changed": it says so.
        assert.ok(['database_unavailable', 'outcome_unknown'].includes(answer.code), answer.code)
        assert.ok(Number(answer.retryAfter) >= 1, 'Retry-After on every 503')
      }

      // Every acknowledged create is there, through the API and in the tables; none is half-written.
      const listed = new Set<string>()
      let cursor: string | null = null
      do {
        const page = await call(base, `/v1/config-objects?limit=100${cursor ? `&cursor=${cursor}` : ''}`, { token })
        assert.is(page.status, 200)
        for (const item of page.body.items) listed.add(item.id)
        cursor = page.body.nextCursor
      } while (cursor)
      const lost = acknowledged.filter((id) => !listed.has(id))
      assert.equal(lost, [], 'no acknowledged write lost')
      const orphans = await admin(
        (c) =>
          c.query(
            'select count(*)::int as n from config_object o where not exists (select 1 from config_object_version v where v.id = o.latest_version_id and v.config_object_id = o.id)',
          ),
        name,
      )
      assert.is(orphans.rows[0].n, 0, 'every object has its version')
      console.log(
        `  faults/postgres: ${acknowledged.length} creates acknowledged, ${unavailable.length} answered 503 while cut, ${createdAfter} after recovery`,
      )
    } finally {
      await plane?.stop()
      await relay.close()
      dir.remove()
    }
  })
})

test('a statement held past the statement timeout by a lock answers 503 in about the timeout, then the instance serves again', async () => {
  await withDatabase(async (name) => {
    const dir = tempDir('svc-fault-pg-')
    let plane: ChildServer | undefined
    const locker = new pg.Client({ connectionString: new URL(`/${name}`, SERVER).toString() })
    try {
      plane = await startPlane(dir.path, urlFor(name), { SERVICE_DATABASE_STATEMENT_TIMEOUT_MS: '1000' })
      const token = await owner(plane.url)
      await locker.connect()
      await locker.query('begin')
      await locker.query('lock table config_object in access exclusive mode')
      const started = performance.now()
      const held = await call(plane.url, '/v1/config-objects', { token })
      const elapsed = performance.now() - started
      await locker.query('rollback')
      assert.is(held.status, 503, JSON.stringify(held.body))
      assert.is(held.body.code, 'database_unavailable')
      assert.is(held.body.details.reason, 'statement_timeout')
      assert.ok(Number(held.headers.get('retry-after')) >= 1)
      assert.ok(elapsed >= 900 && elapsed < 6_000, `answered after ${Math.round(elapsed)} ms`)
      assert.is((await call(plane.url, '/v1/config-objects', { token })).status, 200, 'served again')
      assert.is((await call(plane.url, '/health')).body.database, 'ok')
    } finally {
      await locker.end().catch(() => {})
      await plane?.stop()
      dir.remove()
    }
  })
})

async function waitUntil(done: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 25))
  }
}

test.run()

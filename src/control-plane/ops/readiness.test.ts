/**
 * `GET /ready` over real HTTP, on the engine of the pass: 200 while the database answers and
 * records every migration; 503 naming `database` while it cannot be reached (PostgreSQL: the
 * database refuses connections, and 200 again once it accepts them; SQLite: its handle closed); 503 naming `migrations` when a migration this build needs is not recorded. `/health`
 * stays 200 throughout: it is the liveness check.
 */
import { rmSync } from 'node:fs'
import { sql } from 'kysely'
import { assert, suite } from '../../../tests/harness.ts'
import { serve } from '../../serve.ts'
import { admin, TEST_ENGINE } from '../testing/test-database.ts'
import { startTestControlPlane } from '../testing/test-control-plane.ts'

const test = suite('control-plane/readiness', { timeoutMs: 60_000 })

/** Polls `/ready` until its status is `status` (the probe's result is reused for a second). */
async function readyUntil(url: string, status: number): Promise<any> {
  const deadline = Date.now() + 15_000
  for (;;) {
    const res = await fetch(`${url}/ready`)
    const body = await res.json()
    if (res.status === status) return body
    if (Date.now() > deadline) throw new Error(`/ready stayed ${res.status}: ${JSON.stringify(body)}`)
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
}

async function withServedPlane(
  fn: (url: string, plane: Awaited<ReturnType<typeof startTestControlPlane>>) => Promise<void>,
) {
  const plane = await startTestControlPlane()
  const listener = await serve({ host: '127.0.0.1', port: 0, fetch: plane.app.fetch, direct: plane.app.direct })
  try {
    await fn(`http://127.0.0.1:${listener.port}`, plane)
  } finally {
    await listener.stop()
    // After the SQLite outage below the plane's own shutdown cannot reach its database either.
    await plane.close().catch(() => rmSync(plane.dir, { recursive: true, force: true }))
  }
}

test('/ready is 200 with every check ok, 503 naming migrations when one is not recorded, and 200 once it is again', async () => {
  await withServedPlane(async (url, plane) => {
    const ok = await fetch(`${url}/ready`)
    assert.is(ok.status, 200)
    assert.is(ok.headers.get('cache-control'), 'no-store')
    assert.equal(await ok.json(), { ready: true, checks: { database: 'ok', migrations: 'ok' }, failed: [] })
    const db = plane.app.database.db
    const row = await sql<{
      name: string
      timestamp: string
    }>`select name, timestamp from kysely_migration where name = '0070_audit_origin'`.execute(db)
    assert.is(row.rows.length, 1)
    await sql`delete from kysely_migration where name = '0070_audit_origin'`.execute(db)
    const behind = await readyUntil(url, 503)
    assert.equal(behind, {
      ready: false,
      checks: { database: 'ok', migrations: 'behind' },
      failed: ['migrations'],
      missingMigrations: ['0070_audit_origin'],
    })
    assert.is((await fetch(`${url}/health`)).status, 200, '/health stays the liveness check')
    await sql`insert into kysely_migration (name, timestamp) values (${row.rows[0]!.name}, ${row.rows[0]!.timestamp})`.execute(
      db,
    )
    assert.is((await readyUntil(url, 200)).ready, true)
  })
})

test('/ready is 503 naming the database while it cannot be reached, and 200 when it is back', async () => {
  await withServedPlane(async (url, plane) => {
    assert.is((await fetch(`${url}/ready`)).status, 200)
    let restore: () => Promise<void>
    if (TEST_ENGINE === 'postgres') {
      const name = new URL(plane.databaseUrl!).pathname.slice(1)
      await admin(async (c) => {
        await c.query(`alter database ${name} with allow_connections false`)
        await c.query('select pg_terminate_backend(pid) from pg_stat_activity where datname = $1', [name])
      })
      restore = () => admin(async (c) => void (await c.query(`alter database ${name} with allow_connections true`)))
    } else {
      // A SQLite file stays readable through open descriptors whatever happens to it on disk, so
      // here the handle is closed under the running plane: that outage does not come back.
      await plane.app.database.close()
      restore = async () => {}
    }
    try {
      const started = Date.now()
      const gone = await readyUntil(url, 503)
      assert.equal(gone, {
        ready: false,
        checks: { database: 'unavailable', migrations: 'unknown' },
        failed: ['database'],
      })
      assert.ok(Date.now() - started < 10_000, 'the probe is bounded')
      const health = await fetch(`${url}/health`)
      assert.is(health.status, 200, '/health stays 200: the process is alive')
      await health.arrayBuffer()
    } finally {
      await restore()
    }
    if (TEST_ENGINE === 'postgres')
      assert.equal(await readyUntil(url, 200), {
        ready: true,
        checks: { database: 'ok', migrations: 'ok' },
        failed: [],
      })
  })
})

test.run()

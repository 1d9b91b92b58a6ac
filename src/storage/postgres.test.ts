/**
 * The PostgreSQL side of the storage layer against a real server: bound values read back as on
 * SQLite, counts are numbers, wake-ups cross database handles only when their transaction commits,
 * a transaction that loses a serialization conflict is run again instead of failing, and queries
 * with parameters run as named prepared statements that survive a column added under `select *`.
 * Needs `SERVICE_TEST_DATABASE_URL` (`.ci/run` sets it).
 */
import { sql } from 'kysely'
import { assert, suite, withPostgresDatabase } from '../../tests/harness.ts'
import { openDatabase, type Database, type MigrationSet } from './database.ts'

const serverUrl = process.env.SERVICE_TEST_DATABASE_URL
const test = suite('storage/postgres', { timeoutMs: 60_000 })

interface Db {
  thing: { id: string; flag: number; at: string; n: number }
}

const migrations: MigrationSet = {
  '0001_thing': {
    up: async (db) => {
      await db.schema
        .createTable('thing')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('flag', 'integer', (c) => c.notNull())
        .addColumn('at', 'text', (c) => c.notNull())
        .addColumn('n', 'integer', (c) => c.notNull())
        .execute()
    },
  },
}

async function withTwoHandles(fn: (a: Database<Db>, b: Database<Db>) => Promise<void>) {
  await withPostgresDatabase(async (url) => {
    const a = await openDatabase<Db>({ path: ':unused:', url, migrations })
    const b = await openDatabase<Db>({ path: ':unused:', url, migrations })
    try {
      await fn(a, b)
    } finally {
      await a.close()
      await b.close()
    }
  }, 'svc_storage')
}

function nextWake(database: Database<Db>, channel: string, ms: number): Promise<string | null> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      stop()
      resolve(null)
    }, ms)
    const stop = database.notifier.listen(channel, (payload) => {
      clearTimeout(timer)
      stop()
      resolve(payload)
    })
  })
}

if (!serverUrl) {
  console.log('storage/postgres skipped: SERVICE_TEST_DATABASE_URL is not set (.ci/run sets it)')
} else {
  test('booleans and dates bind as on SQLite, and counts come back as numbers', async () => {
    await withTwoHandles(async (a) => {
      assert.is(a.engine, 'postgres')
      assert.not.match(a.path, /:[^/@]*@/, 'no password in the printable path')
      const when = new Date('2026-01-02T03:04:05.678Z')
      await a.db
        .insertInto('thing')
        .values({ id: 't1', flag: true as never, at: when as never, n: 7 })
        .execute()
      const row = await a.db.selectFrom('thing').selectAll().executeTakeFirstOrThrow()
      assert.equal(row, { id: 't1', flag: 1, at: '2026-01-02T03:04:05.678Z', n: 7 })
      const count = await a.db
        .selectFrom('thing')
        .select((eb) => eb.fn.countAll().as('c'))
        .executeTakeFirstOrThrow()
      assert.is(count.c, 1)
    })
  })

  test('a wake-up sent in a transaction reaches another handle at commit, and never after a rollback', async () => {
    await withTwoHandles(async (a, b) => {
      // Listen first and give the LISTEN connection a moment to open.
      const warm = nextWake(b, 'svc_test', 5000)
      await new Promise((r) => setTimeout(r, 300))
      await a.notifier.notify('svc_test', 'warm')
      assert.is(await warm, 'warm')

      const rolledBack = nextWake(b, 'svc_test', 1500)
      await a.db
        .transaction()
        .execute(async (trx) => {
          await a.notifier.notifyIn(trx, 'svc_test', 'never')
          throw new Error('roll back')
        })
        .catch(() => {})
      assert.is(await rolledBack, null)

      const committed = nextWake(b, 'svc_test', 5000)
      await a.db.transaction().execute(async (trx) => {
        await trx.insertInto('thing').values({ id: 't2', flag: 0, at: 'x', n: 1 }).execute()
        await a.notifier.notifyIn(trx, 'svc_test', 'committed')
      })
      assert.is(await committed, 'committed')
    })
  })

  test('read-then-write transactions that overlap on two handles are retried, so no increment is lost', async () => {
    await withTwoHandles(async (a, b) => {
      await a.db.insertInto('thing').values({ id: 'counter', flag: 0, at: 'x', n: 0 }).execute()
      const bump = (database: Database<Db>) =>
        database.db.transaction().execute(async (trx) => {
          const row = await trx.selectFrom('thing').select('n').where('id', '=', 'counter').executeTakeFirstOrThrow()
          // Widen the window between the read and the write so the transactions overlap.
          await sql`select pg_sleep(0.01)`.execute(trx)
          await trx
            .updateTable('thing')
            .set({ n: row.n + 1 })
            .where('id', '=', 'counter')
            .execute()
        })
      await Promise.all(Array.from({ length: 20 }, (_, i) => bump(i % 2 ? a : b)))
      const row = await a.db.selectFrom('thing').select('n').where('id', '=', 'counter').executeTakeFirstOrThrow()
      assert.is(row.n, 20)
    })
  })

  test('a query sent again runs as a named prepared statement, parsed once per connection', async () => {
    await withTwoHandles(async (a) => {
      await a.db.insertInto('thing').values({ id: 'p1', flag: 0, at: 'x', n: 1 }).execute()
      const read = () => a.db.selectFrom('thing').select('n').where('id', '=', 'p1').executeTakeFirstOrThrow()
      for (let i = 0; i < 3; i++) assert.is((await read()).n, 1)
      const prepared = await sql<{ statement: string }>`select statement from pg_prepared_statements`.execute(a.db)
      assert.ok(
        prepared.rows.some((row) => /select "n" from "thing" where "id" = \$1/.test(row.statement)),
        `the read is prepared on the connection: ${JSON.stringify(prepared.rows)}`,
      )
    })
  })

  test('a column added under a prepared select * is picked up, outside and inside a transaction', async () => {
    await withTwoHandles(async (a, b) => {
      await a.db.insertInto('thing').values({ id: 's1', flag: 0, at: 'x', n: 1 }).execute()
      const readAll = (db: typeof a.db) => db.selectFrom('thing').selectAll().where('id', '=', 's1').executeTakeFirst()
      // Prepare the statement on every connection of the pool (10 at once hold 10 connections).
      await Promise.all(Array.from({ length: 10 }, () => readAll(a.db)))
      await sql`alter table thing add column extra text`.execute(b.db)
      const outside = await readAll(a.db)
      assert.equal(outside, { id: 's1', flag: 0, at: 'x', n: 1, extra: null })
      await sql`alter table thing add column more text`.execute(b.db)
      const inside = await a.db.transaction().execute((trx) => readAll(trx))
      assert.equal(inside, { id: 's1', flag: 0, at: 'x', n: 1, extra: null, more: null })
    })
  })
}

test.run()

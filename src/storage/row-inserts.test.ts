/**
 * Several inserts as one statement: every row lands, a row per element of a list whatever its
 * length, an empty list adds nothing, and on PostgreSQL the inserts are one statement, so a
 * failing one leaves none of the others behind even without a transaction. Runs on SQLite always
 * and on PostgreSQL when `SERVICE_TEST_DATABASE_URL` is set.
 */
import { join } from 'node:path'
import { CompiledQuery, type Kysely } from 'kysely'
import { assert, suite, withPostgresDatabase, withTempDir } from '../../tests/harness.ts'
import { openDatabase, type Database, type MigrationSet } from './database.ts'
import { insertRows, insertsAreOneStatement, withInserts } from './row-inserts.ts'

const test = suite('storage/row-inserts', { timeoutMs: 60_000 })

interface Db {
  parent: { id: string; n: number; note: string | null }
  child: { parent_id: string; word: string; kind: string }
}

const migrations: MigrationSet = {
  '0001_rows': {
    up: async (db: Kysely<any>) => {
      await db.schema
        .createTable('parent')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('n', 'integer', (c) => c.notNull())
        .addColumn('note', 'text')
        .execute()
      await db.schema
        .createTable('child')
        .addColumn('parent_id', 'text', (c) => c.notNull().references('parent.id'))
        .addColumn('word', 'text', (c) => c.notNull())
        .addColumn('kind', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('child_pk', ['parent_id', 'word'])
        .execute()
    },
  },
}

const engines: Array<[string, (fn: (handle: Database<Db>) => Promise<void>) => Promise<void>]> = [
  [
    'SQLite',
    (fn) =>
      withTempDir(async (dir) => {
        const handle = await openDatabase<Db>({ path: join(dir, 'rows.sqlite'), migrations })
        try {
          await fn(handle)
        } finally {
          await handle.close()
        }
      }),
  ],
]
const serverUrl = process.env.SERVICE_TEST_DATABASE_URL
if (serverUrl) {
  engines.push([
    'PostgreSQL',
    (fn) =>
      withPostgresDatabase(async (url) => {
        const handle = await openDatabase<Db>({ path: ':unused:', url, migrations })
        try {
          await fn(handle)
        } finally {
          await handle.close()
        }
      }, 'svc_rows'),
  ])
}

const words = (n: number) => Array.from({ length: n }, (_, i) => `w${i}'"$1?`)

for (const [engine, withDatabase] of engines) {
  test(`${engine}: a row and a row per list element land together, whatever the list's length`, async () => {
    await withDatabase(async ({ db }) => {
      for (const [id, count] of [
        ['p1', 3],
        ['p2', 700],
        ['p3', 1],
      ] as const) {
        await insertRows(db, [
          { table: 'parent', row: { id, n: count, note: count === 1 ? null : `it's ${id}` } },
          { table: 'child', shared: { parent_id: id, kind: 'k' }, each: { column: 'word', values: words(count) } },
        ])
      }
      const parents = await db.selectFrom('parent').selectAll().orderBy('id').execute()
      assert.equal(parents, [
        { id: 'p1', n: 3, note: "it's p1" },
        { id: 'p2', n: 700, note: "it's p2" },
        { id: 'p3', n: 1, note: null },
      ])
      const counts = await db
        .selectFrom('child')
        .select(['parent_id', (eb) => eb.fn.countAll().as('c')])
        .groupBy('parent_id')
        .orderBy('parent_id')
        .execute()
      assert.equal(
        counts.map((r) => [r.parent_id, Number(r.c)]),
        [
          ['p1', 3],
          ['p2', 700],
          ['p3', 1],
        ],
      )
      const stored = await db.selectFrom('child').select('word').where('parent_id', '=', 'p1').orderBy('word').execute()
      assert.equal(
        stored.map((r) => r.word),
        words(3),
        'quotes and placeholder-like text are stored as given',
      )
    })
  })

  test(`${engine}: an empty list adds nothing and no inserts run nothing`, async () => {
    await withDatabase(async ({ db }) => {
      await insertRows(db, [])
      await insertRows(db, [
        { table: 'parent', row: { id: 'p', n: 0, note: null } },
        { table: 'child', shared: { parent_id: 'p', kind: 'k' }, each: { column: 'word', values: [] } },
      ])
      assert.is((await db.selectFrom('parent').selectAll().execute()).length, 1)
      assert.is((await db.selectFrom('child').selectAll().execute()).length, 0)
    })
  })

  test(`${engine}: inserts in a transaction that fails later leave nothing behind`, async () => {
    await withDatabase(async ({ db }) => {
      const error = await db
        .transaction()
        .execute(async (trx) => {
          await insertRows(trx, [{ table: 'parent', row: { id: 'kept?', n: 1, note: null } }])
          await insertRows(trx, [{ table: 'parent', row: { id: 'kept?', n: 2, note: null } }])
        })
        .catch((e: unknown) => e)
      assert.ok(error instanceof Error)
      assert.is((await db.selectFrom('parent').selectAll().execute()).length, 0)
    })
  })
}

if (serverUrl) {
  test('PostgreSQL: the inserts are one statement, so a failing one leaves none of the others, without a transaction', async () => {
    await withPostgresDatabase(async (url) => {
      const { db, close } = await openDatabase<Db>({ path: ':unused:', url, migrations })
      try {
        assert.ok(insertsAreOneStatement(db))
        const error = await insertRows(db, [
          { table: 'parent', row: { id: 'a', n: 1, note: null } },
          { table: 'child', shared: { parent_id: 'a', kind: 'k' }, each: { column: 'word', values: ['x', 'y'] } },
          // no such parent: the foreign key fails at the end of the statement
          { table: 'child', shared: { parent_id: 'missing', kind: 'k' }, each: { column: 'word', values: ['z'] } },
        ]).catch((e: unknown) => e)
        assert.ok(error instanceof Error)
        assert.is((await db.selectFrom('parent').selectAll().execute()).length, 0)
        assert.is((await db.selectFrom('child').selectAll().execute()).length, 0)
      } finally {
        await close()
      }
    }, 'svc_rows')
  })

  test('PostgreSQL: WITH items number their placeholders from the given position', async () => {
    await withPostgresDatabase(async (url) => {
      const { db, close } = await openDatabase<Db>({ path: ':unused:', url, migrations })
      try {
        const prefix = withInserts(
          [
            { table: 'parent', row: { id: 'b', n: 5, note: 'x' } },
            { table: 'child', shared: { parent_id: 'b', kind: 'k' }, each: { column: 'word', values: ['p', 'q'] } },
          ],
          2,
        )
        assert.match(prefix.items, /\$2\b/)
        assert.not.match(prefix.items, /\$1\b/)
        const rows = await db.executeQuery<{ echoed: string }>(
          CompiledQuery.raw(`with ${prefix.items} select $1::text as echoed`, ['first', ...prefix.parameters]),
        )
        assert.equal(rows.rows, [{ echoed: 'first' }])
        assert.equal(
          (await db.selectFrom('child').select('word').orderBy('word').execute()).map((r) => r.word),
          ['p', 'q'],
        )
      } finally {
        await close()
      }
    }, 'svc_rows')
  })
} else {
  console.log('storage/row-inserts: PostgreSQL cases skipped: SERVICE_TEST_DATABASE_URL is not set')
}

test.run()

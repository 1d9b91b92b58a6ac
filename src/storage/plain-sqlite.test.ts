import { statSync } from 'node:fs'
import { join } from 'node:path'
import type { Kysely } from 'kysely'
import { assert, suite, withTempDir } from '../../tests/harness.ts'
import { openDatabase, type MigrationSet } from './database.ts'
import { openPlainSqlite } from './plain-sqlite.ts'

interface Thing {
  seq: number
  id: string
  flag: number
  at: string
}

const migrations: MigrationSet = {
  '0001_things': {
    up: async (db: Kysely<any>) => {
      await db.schema
        .createTable('things')
        .addColumn('seq', 'integer', (c) => c.primaryKey().autoIncrement())
        .addColumn('id', 'text', (c) => c.notNull().unique())
        .addColumn('flag', 'integer', (c) => c.notNull())
        .addColumn('at', 'text')
        .execute()
    },
  },
}

const plain = suite('storage/plain-sqlite')

plain(
  'a plain database is migrated with the kysely record, and a kysely database of the same file agrees',
  async () => {
    await withTempDir(async (dir) => {
      const path = join(dir, 'state', 'p.sqlite')
      const first = await openPlainSqlite({ path, migrations })
      const inserted = first.run('insert into things (id, flag, at) values (?, ?, ?)', 'a', true, new Date(0))
      assert.equal(inserted, { changes: 1, lastInsertRowid: 1 })
      assert.equal(first.get('select * from things where id = ?', 'a'), {
        seq: 1,
        id: 'a',
        flag: 1,
        at: '1970-01-01T00:00:00.000Z',
      })
      assert.is(first.get('select * from things where id = ?', 'missing'), undefined)
      await first.close()
      await first.close()
      assert.is(statSync(path).mode & 0o777, 0o600)
      // The record is kysely's: a kysely database finds nothing to do, and the plain one reopens as is.
      const kysely = await openDatabase<{ things: Thing }>({ path, migrations })
      await kysely.db.insertInto('things').values({ seq: 2, id: 'b', flag: 0, at: 'x' }).execute()
      await kysely.close()
      const again = await openPlainSqlite({ path, migrations })
      try {
        assert.equal(
          again.all<Pick<Thing, 'id'>>('select id from things order by seq').map((row) => row.id),
          ['a', 'b'],
        )
        assert.equal(again.all<{ name: string }>('select name from kysely_migration'), [{ name: '0001_things' }])
      } finally {
        await again.close()
      }
    })
  },
)

plain('a failing migration rejects and leaves no half schema', async () => {
  await withTempDir(async (dir) => {
    const path = join(dir, 'f.sqlite')
    const failing: MigrationSet = {
      '0001_half': {
        up: async (db: Kysely<any>) => {
          await db.schema.createTable('half').addColumn('id', 'text').execute()
          throw new Error('boom')
        },
      },
    }
    let failed: unknown
    await openPlainSqlite({ path, migrations: failing }).catch((error) => {
      failed = error
    })
    assert.match(String(failed), /0001_half failed: boom/)
    const db = await openPlainSqlite({ path, migrations })
    try {
      assert.equal(db.all("select name from sqlite_master where name = 'half'"), [])
    } finally {
      await db.close()
    }
  })
})

plain('an in-memory database is migrated on its own connection', async () => {
  const db = await openPlainSqlite({ path: ':memory:', migrations })
  try {
    db.run('insert into things (id, flag) values (?, ?)', 'm', 0)
    assert.equal(db.get<{ n: number }>('select count(*) as n from things'), { n: 1 })
  } finally {
    await db.close()
  }
})

plain.run()

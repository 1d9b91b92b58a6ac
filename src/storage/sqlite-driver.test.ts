import { join } from 'node:path'
import { sql, type Kysely } from 'kysely'
import { assert, suite, withTempDir } from '../../tests/harness.ts'
import { openDatabase, type MigrationSet } from './database.ts'

interface Db {
  things: { id: string; n: number }
}

const migrations: MigrationSet = {
  '0001_things': {
    up: async (db: Kysely<any>) => {
      await db.schema
        .createTable('things')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('n', 'integer', (c) => c.notNull())
        .execute()
    },
  },
}

const test = suite('storage/sqlite-driver')

const ids = async (db: Kysely<Db>) =>
  (await db.selectFrom('things').select('id').orderBy('id').execute()).map((r) => r.id)

test('a read outside a transaction neither waits for an open transaction nor sees its rows before the commit', async () => {
  await withTempDir(async (dir) => {
    const database = await openDatabase<Db>({ path: join(dir, 'a.sqlite'), migrations })
    try {
      const db = database.db
      await db.insertInto('things').values({ id: 'a', n: 1 }).execute()
      let letCommit!: () => void
      const held = new Promise<void>((resolve) => {
        letCommit = resolve
      })
      let inserted!: () => void
      const insertedNow = new Promise<void>((resolve) => {
        inserted = resolve
      })
      const transaction = db.transaction().execute(async (trx) => {
        await trx.insertInto('things').values({ id: 'b', n: 2 }).execute()
        inserted()
        await held
      })
      await insertedNow
      // The transaction is open with its insert done: a read answers at once, from the committed state.
      const during = await Promise.race([
        ids(db),
        new Promise<string>((resolve) => setTimeout(() => resolve('waited'), 2_000)),
      ])
      assert.equal(during, ['a'])
      letCommit()
      await transaction
      assert.equal(await ids(db), ['a', 'b'], 'committed rows are read at once after the commit')
    } finally {
      await database.close()
    }
  })
})

test('writes outside transactions still wait for an open transaction, and a rolled-back one leaves nothing', async () => {
  await withTempDir(async (dir) => {
    const database = await openDatabase<Db>({ path: join(dir, 'b.sqlite'), migrations })
    try {
      const db = database.db
      const order: string[] = []
      let letGo!: () => void
      const held = new Promise<void>((resolve) => {
        letGo = resolve
      })
      const failing = db
        .transaction()
        .execute(async (trx) => {
          await trx.insertInto('things').values({ id: 'x', n: 1 }).execute()
          order.push('transaction wrote')
          await held
          throw new Error('roll back')
        })
        .catch((error: Error) => error.message)
      await new Promise((resolve) => setTimeout(resolve, 20))
      const write = db
        .insertInto('things')
        .values({ id: 'y', n: 2 })
        .execute()
        .then(() => order.push('outside write'))
      await new Promise((resolve) => setTimeout(resolve, 50))
      order.push('released')
      letGo()
      assert.is(await failing, 'roll back')
      await write
      assert.equal(order, ['transaction wrote', 'released', 'outside write'])
      assert.equal(await ids(db), ['y'])
    } finally {
      await database.close()
    }
  })
})

test('the read connection refuses to write: raw SQL that is not a plain select takes the writer', async () => {
  await withTempDir(async (dir) => {
    const database = await openDatabase<Db>({ path: join(dir, 'c.sqlite'), migrations })
    try {
      const db = database.db
      await sql`insert into things (id, n) values ('r', 1)`.execute(db)
      const rows = await sql<{ n: number }>`select count(*) as n from things`.execute(db)
      assert.is(rows.rows[0]!.n, 1)
      await sql`  with gone as (select 'r' as id) delete from things where id in (select id from gone)`.execute(db)
      assert.equal(await ids(db), [])
    } finally {
      await database.close()
    }
  })
})

test.run()

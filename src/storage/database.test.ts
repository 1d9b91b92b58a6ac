import { readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { sql, type Kysely } from 'kysely'
import { assert, suite, withTempDir } from '../../tests/harness.ts'
import { openDatabase, type MigrationSet } from './database.ts'

interface Db {
  things: { id: string; flag: number; at: string; note: string | null }
}

const migrations: MigrationSet = {
  '0001_things': {
    up: async (db: Kysely<any>) => {
      await db.schema
        .createTable('things')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('flag', 'integer', (c) => c.notNull())
        .addColumn('at', 'text', (c) => c.notNull())
        .addColumn('note', 'text')
        .execute()
    },
  },
}

const database = suite('storage/database')

database('migrations are applied once and recorded in the migrations table', async () => {
  await withTempDir(async (dir) => {
    const path = join(dir, 'state', 'a.sqlite')
    const first = await openDatabase<Db>({ path, migrations })
    await first.close()
    const second = await openDatabase<Db>({
      path,
      migrations: {
        ...migrations,
        '0002_more': {
          up: async (db: Kysely<any>) => {
            await db.schema.createTable('more').addColumn('id', 'text').execute()
          },
        },
      },
    })
    const recorded = await sql<{ name: string }>`select name from kysely_migration order by name`.execute(second.db)
    assert.equal(
      recorded.rows.map((r) => r.name),
      ['0001_things', '0002_more'],
    )
    await second.close()
  })
})

database('booleans and dates are normalised on bind for every driver', async () => {
  await withTempDir(async (dir) => {
    const handle = await openDatabase<Db>({ path: join(dir, 'b.sqlite'), migrations })
    const when = new Date('2026-01-02T03:04:05.678Z')
    await handle.db
      .insertInto('things')
      .values({
        id: 'a',
        flag: true as unknown as number,
        at: when as unknown as string,
        note: undefined as unknown as null,
      })
      .execute()
    const row = await handle.db.selectFrom('things').selectAll().executeTakeFirstOrThrow()
    assert.equal(row, { id: 'a', flag: 1, at: '2026-01-02T03:04:05.678Z', note: null })
    await handle.close()
  })
})

database('a failed transaction leaves nothing half-written', async () => {
  await withTempDir(async (dir) => {
    const handle = await openDatabase<Db>({ path: join(dir, 'c.sqlite'), migrations })
    await handle.db.insertInto('things').values({ id: 'x', flag: 0, at: 'now', note: null }).execute()
    let failed = false
    try {
      await handle.db.transaction().execute(async (trx) => {
        await trx.insertInto('things').values({ id: 'y', flag: 0, at: 'now', note: null }).execute()
        await trx.insertInto('things').values({ id: 'x', flag: 0, at: 'now', note: null }).execute()
      })
    } catch {
      failed = true
    }
    assert.ok(failed, 'duplicate key rejected')
    const ids = (await handle.db.selectFrom('things').select('id').execute()).map((r) => r.id)
    assert.equal(ids, ['x'])
    await handle.close()
  })
})

database('a file database uses WAL, enforces foreign keys and is readable only by its owner', async () => {
  await withTempDir(async (dir) => {
    const path = join(dir, 'd.sqlite')
    const handle = await openDatabase<Db>({ path, migrations })
    const mode = await sql<{ journal_mode: string }>`pragma journal_mode`.execute(handle.db)
    assert.is(mode.rows[0]!.journal_mode, 'wal')
    const fk = await sql<{ foreign_keys: number }>`pragma foreign_keys`.execute(handle.db)
    assert.is(fk.rows[0]!.foreign_keys, 1)
    assert.is(statSync(path).mode & 0o777, 0o600)
    await handle.close()
    assert.ok(readFileSync(path).subarray(0, 15).toString() === 'SQLite format 3')
  })
})

database('a failing migration rolls back and reports its name', async () => {
  await withTempDir(async (dir) => {
    const broken: MigrationSet = {
      ...migrations,
      '0002_broken': {
        up: async (db: Kysely<any>) => {
          await db.schema.createTable('half').addColumn('id', 'text').execute()
          throw new Error('boom')
        },
      },
    }
    let message = ''
    try {
      await openDatabase<Db>({ path: join(dir, 'e.sqlite'), migrations: broken })
    } catch (error) {
      message = (error as Error).message
    }
    assert.match(message, /0002_broken/)
    const reopened = await openDatabase<Db>({ path: join(dir, 'e.sqlite'), migrations })
    const tables = await sql<{
      name: string
    }>`select name from sqlite_master where type = 'table' and name = 'half'`.execute(reopened.db)
    assert.is(tables.rows.length, 0, 'the half-created table was rolled back')
    await reopened.close()
  })
})

database('cached prepared statements stay correct across parameters and schema changes', async () => {
  await withTempDir(async (dir) => {
    const handle = await openDatabase<Db>({ path: join(dir, 'f.sqlite'), migrations })
    for (let i = 0; i < 300; i++)
      await handle.db
        .insertInto('things')
        .values({ id: `t${i}`, flag: i % 2, at: String(i), note: null })
        .execute()
    for (const i of [0, 7, 299]) {
      const row = await handle.db.selectFrom('things').selectAll().where('id', '=', `t${i}`).executeTakeFirstOrThrow()
      assert.is(row.at, String(i))
    }
    await handle.db.schema.alterTable('things').addColumn('extra', 'text').execute()
    const after = await handle.db.selectFrom('things').selectAll().where('id', '=', 't7').executeTakeFirstOrThrow()
    assert.is(
      (after as Record<string, unknown>).extra,
      null,
      'a statement cached before the schema change sees the new column',
    )
    await handle.close()
  })
})

database.run()

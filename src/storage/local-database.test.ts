import { statSync } from 'node:fs'
import { join } from 'node:path'
import type { Kysely } from 'kysely'
import { workspaceMigrations } from '../../migrations/workspace/index.ts'
import { assert, BUN, runCommand, suite, withTempDir } from '../../tests/harness.ts'
import { openDatabase, type MigrationSet } from './database.ts'
import { openLocalDatabase, type LocalMigrationSet } from './local-database.ts'
import { openSqlite } from './open-sqlite.ts'

const test = suite('storage/local-database')

/** The workspace's first migration as earlier versions wrote it, through kysely's schema builder and migrator. */
const kyselyStateMigration = {
  up: async (db: Kysely<any>) => {
    await db.schema
      .createTable('tokens')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('hash', 'text', (c) => c.notNull().unique())
      .addColumn('scope', 'text', (c) => c.notNull())
      .addColumn('label', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('expires_at', 'text')
      .addColumn('last_used_at', 'text')
      .execute()
    await db.schema
      .createTable('events')
      .addColumn('seq', 'integer', (c) => c.primaryKey().autoIncrement())
      .addColumn('id', 'text', (c) => c.notNull().unique())
      .addColumn('workspace_id', 'text', (c) => c.notNull())
      .addColumn('type', 'text', (c) => c.notNull())
      .addColumn('payload', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .execute()
    await db.schema.createIndex('events_workspace_seq').on('events').columns(['workspace_id', 'seq']).execute()
    await db.schema
      .createTable('audit')
      .addColumn('seq', 'integer', (c) => c.primaryKey().autoIncrement())
      .addColumn('id', 'text', (c) => c.notNull().unique())
      .addColumn('workspace_id', 'text', (c) => c.notNull())
      .addColumn('actor', 'text', (c) => c.notNull())
      .addColumn('action', 'text', (c) => c.notNull())
      .addColumn('target', 'text', (c) => c.notNull())
      .addColumn('summary', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .execute()
    await db.schema.createIndex('audit_workspace_seq').on('audit').columns(['workspace_id', 'seq']).execute()
  },
}

/** Every table and index definition except the migration record's, read without migrating anything. */
async function schemaOf(path: string): Promise<unknown[]> {
  const raw = await openSqlite(path)
  try {
    return raw
      .prepare("select sql from sqlite_master where sql is not null and name not like 'kysely_%' order by name")
      .all([])
  } finally {
    raw.close()
  }
}

test('a state database migrated through kysely by an earlier version opens as current, rows and record kept', async () => {
  await withTempDir(async (dir) => {
    const path = join(dir, 'state.sqlite')
    const earlier = await openDatabase<any>({ path, migrations: { '0001_state': kyselyStateMigration } })
    await earlier.db
      .insertInto('tokens')
      .values({ id: 'tok_1', hash: 'h1', scope: 'client', created_at: '2026-01-01T00:00:00.000Z' })
      .execute()
    const [recordedBefore] = await earlier.db.selectFrom('kysely_migration').selectAll().execute()
    await earlier.close()

    const db = await openLocalDatabase({ path, migrations: workspaceMigrations })
    try {
      assert.equal(db.all('select id, hash from tokens'), [{ id: 'tok_1', hash: 'h1' }])
      assert.equal(db.all('select * from kysely_migration'), [recordedBefore], 'nothing re-applied or re-recorded')
    } finally {
      db.close()
    }
  })
})

test('this version writes the same schema kysely wrote, and an earlier version goes on migrating it', async () => {
  await withTempDir(async (dir) => {
    const ours = join(dir, 'ours.sqlite')
    const theirs = join(dir, 'theirs.sqlite')
    ;(await openLocalDatabase({ path: ours, migrations: workspaceMigrations })).close()
    await (await openDatabase<any>({ path: theirs, migrations: { '0001_state': kyselyStateMigration } })).close()
    assert.equal(await schemaOf(ours), await schemaOf(theirs))

    // kysely's migrator, given one more migration, takes its lock and records it beside ours.
    const later: MigrationSet = {
      '0001_state': kyselyStateMigration,
      '0002_later': {
        up: async (db: Kysely<any>) => void (await db.schema.createTable('later').addColumn('id', 'text').execute()),
      },
    }
    const earlier = await openDatabase<any>({ path: ours, migrations: later })
    try {
      const names = await earlier.db.selectFrom('kysely_migration').select('name').orderBy('name').execute()
      assert.equal(
        names.map((row: { name: string }) => row.name),
        ['0001_state', '0002_later'],
      )
    } finally {
      await earlier.close()
    }
  })
})

test('a database migrated by a newer version is refused and left as it was', async () => {
  await withTempDir(async (dir) => {
    const path = join(dir, 'state.sqlite')
    const newer: LocalMigrationSet = {
      ...workspaceMigrations,
      '0002_newer': { up: (db) => db.exec('create table newer (id text)') },
    }
    ;(await openLocalDatabase({ path, migrations: newer })).close()
    let error: Error | undefined
    await openLocalDatabase({ path, migrations: workspaceMigrations }).catch((e: Error) => {
      error = e
    })
    assert.match(String(error?.message), /migrated by a newer version \(0002_newer unknown here\)/)
    const db = await openLocalDatabase({ path, migrations: newer })
    try {
      assert.equal(
        db.all<{ name: string }>('select name from kysely_migration order by name').map((r) => r.name),
        ['0001_state', '0002_newer'],
      )
    } finally {
      db.close()
    }
  })
})

test('a failing migration applies nothing of its run and names itself', async () => {
  await withTempDir(async (dir) => {
    const path = join(dir, 'state.sqlite')
    const failing: LocalMigrationSet = {
      '0001_a': { up: (db) => db.exec('create table a (id text)') },
      '0002_b': {
        up: (db) => {
          db.exec('create table b (id text)')
          db.exec('create table a (id text)')
        },
      },
    }
    let error: Error | undefined
    await openLocalDatabase({ path, migrations: failing }).catch((e: Error) => {
      error = e
    })
    assert.match(String(error?.message), /^database migration 0002_b failed: .*already exists/)
    const raw = await openSqlite(path)
    try {
      assert.equal(raw.prepare('select name from sqlite_master').all([]), [], 'no table, no record')
    } finally {
      raw.close()
    }
  })
})

test('a transaction commits when its work returns, rolls back when it throws, and does not nest', async () => {
  await withTempDir(async (dir) => {
    const db = await openLocalDatabase({
      path: join(dir, 'state.sqlite'),
      migrations: { '0001_t': { up: (m) => m.exec('create table t (id integer primary key, v text)') } },
    })
    try {
      assert.is(
        db.transaction(() => db.run('insert into t (v) values (?), (?)', ['a', 'b'])),
        2,
      )
      assert.throws(() =>
        db.transaction(() => {
          db.run('insert into t (v) values (?)', ['c'])
          throw new Error('changed my mind')
        }),
      )
      assert.throws(() => db.transaction(() => db.transaction(() => 1)), /do not nest/)
      // `or rollback` ends the transaction inside SQLite; the caller still sees the constraint, not the rollback.
      assert.throws(
        () => db.transaction(() => db.run('insert or rollback into t (id, v) values (1, ?)', ['again'])),
        /UNIQUE constraint failed/,
      )
      assert.equal(
        db.all<{ v: string }>('select v from t order by id').map((r) => r.v),
        ['a', 'b'],
      )
      assert.equal(db.first('select count(*) as n from t where v = ?', [true]), { n: 0 }, 'booleans bind as 0/1')
    } finally {
      db.close()
      db.close()
    }
  })
})

test('the database file is readable by its owner only', async () => {
  await withTempDir(async (dir) => {
    const path = join(dir, 'nested', 'state.sqlite')
    const db = await openLocalDatabase({ path, migrations: workspaceMigrations })
    try {
      assert.is(statSync(path).mode & 0o777, 0o600)
      assert.is(statSync(join(dir, 'nested')).mode & 0o777, 0o700)
    } finally {
      db.close()
    }
  })
})
test('processes started together on a new database migrate it once: the others wait for the lock, then see it done', async () => {
  await withTempDir(async (dir) => {
    const path = join(dir, 'state.sqlite')
    const module = new URL('./local-database.ts', import.meta.url).pathname
    // Each migration holds the write lock for 300 ms, so the starts overlap inside it.
    const script = `
      import { openLocalDatabase } from ${JSON.stringify(module)}
      const hold = () => { const until = Date.now() + 300; while (Date.now() < until); }
      const db = await openLocalDatabase({ path: process.argv[1], migrations: {
        '0001_a': { up: (m) => { m.exec('create table a (id text)'); hold() } },
        '0002_b': { up: (m) => m.exec('create table b (id text)') },
      } })
      db.close()
    `
    const runs = await Promise.all(
      Array.from({ length: 4 }, () => runCommand(BUN, ['-e', script, path], { timeoutMs: 20_000 })),
    )
    for (const run of runs) assert.is(run.code, 0, run.stderr)
    const raw = await openSqlite(path)
    try {
      assert.equal(raw.prepare('select name from kysely_migration order by name').all([]), [
        { name: '0001_a' },
        { name: '0002_b' },
      ])
    } finally {
      raw.close()
    }
  })
})

test.run()

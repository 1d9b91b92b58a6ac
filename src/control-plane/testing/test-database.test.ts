/**
 * The runner's clean-up of PostgreSQL test databases that a killed run left behind.
 * Needs `SERVICE_TEST_DATABASE_URL` (`.ci/run` sets it).
 */
import { assert, suite } from '../../../tests/harness.ts'
import { admin, dropStaleRunDatabases, newRunId } from './test-database.ts'

const serverUrl = process.env.SERVICE_TEST_DATABASE_URL
const test = suite('control-plane/test-database', { timeoutMs: 60_000 })

if (serverUrl) {
  test('databases of a run whose runner is gone, or a day old, are dropped; a live run and other names are kept', async () => {
    const now = Date.now()
    const tag = Math.random().toString(36).slice(2, 8)
    const names = {
      deadRunner: `svct_${newRunId(now, 999_999_999)}_stale_${tag}`,
      dayOld: `svct_${newRunId(now - 25 * 3600_000, process.pid)}_old_${tag}`,
      live: `svct_${newRunId(now, process.pid)}_live_${tag}`,
      otherName: `svct_manual_${tag}`,
    }
    try {
      await admin(async (c) => {
        for (const name of Object.values(names)) await c.query(`create database ${name}`)
      })
      const dropped = await dropStaleRunDatabases(now)
      assert.ok(dropped.includes(names.deadRunner), 'a dead runner’s database is dropped')
      assert.ok(dropped.includes(names.dayOld), 'a day-old database is dropped')
      assert.ok(!dropped.includes(names.live) && !dropped.includes(names.otherName))
      const left = await admin(
        async (c) =>
          (await c.query<{ datname: string }>('select datname from pg_database where datname like $1', [`%${tag}`]))
            .rows,
      )
      assert.equal(left.map((row) => row.datname).sort(), [names.live, names.otherName].sort())
    } finally {
      await admin(async (c) => {
        for (const name of Object.values(names)) await c.query(`drop database if exists ${name} with (force)`)
      })
    }
  })
} else {
  console.log('control-plane/test-database skipped: SERVICE_TEST_DATABASE_URL is not set (.ci/run sets it)')
}

test.run()

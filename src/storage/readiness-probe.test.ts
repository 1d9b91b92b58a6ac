/**
 * The /ready probe: one query for any number of concurrent callers, a recent result reused, the
 * migrations judged against the embedded names (unknown extra ones are fine), and a database that
 * fails reported as unavailable.
 */
import { assert, suite } from '../../tests/harness.ts'
import { openDatabase } from './database.ts'
import { readinessProbe } from './readiness-probe.ts'

const test = suite('storage/readiness-probe')

const noop = { up: async () => {} }

test('concurrent checks share one query; recorded migrations are compared with the embedded ones', async () => {
  const database = await openDatabase({ path: ':memory:', migrations: { '0001_a': noop, '0002_b': noop } })
  try {
    let queries = 0
    const counted = database.db.withPlugin({
      transformQuery: (args) => {
        queries++
        return args.node
      },
      transformResult: async (args) => args.result,
    })
    const check = readinessProbe(counted, ['0001_a', '0002_b'])
    const results = await Promise.all(Array.from({ length: 20 }, () => check()))
    assert.is(queries, 1)
    assert.equal(results[0], { ready: true, checks: { database: 'ok', migrations: 'ok' }, failed: [] })
    const newer = await readinessProbe(database.db, ['0001_a'])()
    assert.is(newer.ready, true, 'a migration this build does not know (a newer version applied it) is fine')
    const behind = await readinessProbe(database.db, ['0001_a', '0002_b', '0003_c'])()
    assert.equal(behind.failed, ['migrations'])
    assert.equal(behind.missingMigrations, ['0003_c'])
  } finally {
    await database.close()
  }
})

test('a database never migrated is behind; a closed one is unavailable', async () => {
  const database = await openDatabase({ path: ':memory:', migrations: {} })
  const none = await readinessProbe(database.db, ['0001_a'], { intervalMs: 0 })()
  assert.equal(none.checks, { database: 'ok', migrations: 'behind' })
  await database.close()
  const gone = await readinessProbe(database.db, ['0001_a'])()
  assert.equal(gone, { ready: false, checks: { database: 'unavailable', migrations: 'unknown' }, failed: ['database'] })
})

test.run()

/**
 * The /health database probe: answers from a recent result without querying, probes again once
 * the result is older than the interval, and reports a database that fails as unavailable.
 */
import { assert, suite } from '../../tests/harness.ts'
import { openDatabase } from './database.ts'
import { databaseProbe } from './health-probe.ts'

const test = suite('storage/health-probe')

test('a recent result is reused without a query; an older one is probed again and sees the database gone', async () => {
  const database = await openDatabase({ path: ':memory:', migrations: {} })
  const check = databaseProbe(database.db, { intervalMs: 300, timeoutMs: 1_000 })
  assert.is(await check(), 'ok')
  await database.close()
  assert.is(check(), 'ok', 'within the interval the last result answers at once, nothing is queried')
  await new Promise((resolve) => setTimeout(resolve, 350))
  assert.is(await check(), 'unavailable', 'past the interval a probe runs and fails')
})

test('concurrent checks share one probe: one query for twenty callers', async () => {
  const database = await openDatabase({ path: ':memory:', migrations: {} })
  try {
    let queries = 0
    const counted = database.db.withPlugin({
      transformQuery: (args) => {
        queries++
        return args.node
      },
      transformResult: async (args) => args.result,
    })
    const check = databaseProbe(counted)
    const results = await Promise.all(Array.from({ length: 20 }, () => check()))
    assert.equal([...new Set(results)], ['ok'])
    assert.is(queries, 1)
    await check()
    assert.is(queries, 1, 'and none while the result is recent')
  } finally {
    await database.close()
  }
})

test.run()

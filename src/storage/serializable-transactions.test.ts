/**
 * The retry rule behind every transaction: a serialization failure or deadlock runs the work
 * again, a transaction that keeps losing ends as 409 `write_conflict`, and any other error passes
 * through at once.
 */
import type { Kysely } from 'kysely'
import { ApiError, DatabaseUnavailableError } from '../core/errors.ts'
import { assert, suite } from '../../tests/harness.ts'
import {
  afterCommit,
  MAX_TRANSACTION_ATTEMPTS,
  RetryableApiError,
  retryingTransactions,
  retryOnConflict,
} from './serializable-transactions.ts'
import { runInTransactionScope, type TransactionScope } from './transaction-scope.ts'

const test = suite('storage/serializable-transactions')

test('a serialization failure is retried until the work succeeds', async () => {
  let calls = 0
  const result = await retryOnConflict(async () => {
    calls++
    if (calls < 3)
      throw Object.assign(new Error('could not serialize access'), { code: calls === 1 ? '40001' : '40P01' })
    return 'done'
  })
  assert.equal([result, calls], ['done', 3])
})

test('work that keeps losing ends as 409 write_conflict with Retry-After after the last attempt', async () => {
  let calls = 0
  const error = await retryOnConflict(async () => {
    calls++
    throw Object.assign(new Error('could not serialize access'), { code: '40001' })
  }).catch((e: unknown) => e)
  assert.is(calls, MAX_TRANSACTION_ATTEMPTS)
  assert.ok(error instanceof ApiError)
  assert.equal([error.status, error.code, error.headers?.['retry-after']], [409, 'write_conflict', '1'])
})

test('a RetryableApiError is retried, and is itself the answer once attempts run out', async () => {
  let calls = 0
  const conflict = new RetryableApiError(409, 'version_conflict', 'lost')
  const error = await retryOnConflict(async () => {
    calls++
    throw conflict
  }).catch((e: unknown) => e)
  assert.is(calls, MAX_TRANSACTION_ATTEMPTS)
  assert.is(error, conflict)
})

test('any other error passes through on the first attempt', async () => {
  let calls = 0
  const unique = Object.assign(new Error('duplicate key'), { code: '23505' })
  const error = await retryOnConflict(async () => {
    calls++
    throw unique
  }).catch((e: unknown) => e)
  assert.equal([calls, error], [1, unique])
})

/**
 * A database handle whose transactions run their work and then fail as `failAt` says: while the
 * work runs (before COMMIT), or while COMMIT is on its way (the connection lost, outcome unknown).
 */
function failingDb(failAt: 'work' | 'commit' | 'never') {
  const fake = {
    transaction: () => ({
      execute: async (callback: (trx: unknown) => Promise<unknown>) => {
        if (failAt === 'work') throw new DatabaseUnavailableError('unreachable')
        const result = await callback({})
        if (failAt === 'commit') throw new DatabaseUnavailableError('unreachable')
        return result
      },
    }),
  }
  return retryingTransactions(fake as unknown as Kysely<unknown>, { serializable: false })
}

const codeOf = (error: unknown) => (error instanceof ApiError ? `${error.status} ${error.code}` : String(error))

test('a connection lost before COMMIT is 503 database_unavailable: nothing was changed', async () => {
  const error = await failingDb('work')
    .transaction()
    .execute(async () => 1)
    .catch((e: unknown) => e)
  assert.is(codeOf(error), '503 database_unavailable')
})

test('a connection lost while COMMIT was on its way is 503 outcome_unknown, never database_unavailable', async () => {
  const error = await failingDb('commit')
    .transaction()
    .execute(async () => 1)
    .catch((e: unknown) => e)
  assert.is(codeOf(error), '503 outcome_unknown')
})

test("with a scope that records commits, a lost COMMIT is resolved: committed gives the work's result, not committed database_unavailable", async () => {
  const asked: number[] = []
  const scope = (committed: boolean | 'unknown'): TransactionScope => ({
    commits: 0,
    beforeCommit: async () => {},
    resolveCommit: async (n) => {
      asked.push(n)
      if (committed === 'unknown') throw new DatabaseUnavailableError('unreachable')
      return committed
    },
  })
  const run = (s: TransactionScope) =>
    runInTransactionScope(s, () =>
      failingDb('commit')
        .transaction()
        .execute(async () => 'result'),
    ).catch((e: unknown) => e)
  const yes = scope(true)
  assert.is(await run(yes), 'result')
  assert.is(yes.commits, 1)
  const no = scope(false)
  assert.is(codeOf(await run(no)), '503 database_unavailable')
  assert.is(no.commits, 0)
  assert.is(codeOf(await run(scope('unknown'))), '503 outcome_unknown')
  assert.equal(asked, [1, 1, 1])
})

test('a scope counts each committed transaction and runs beforeCommit inside each, with its number', async () => {
  const seen: number[] = []
  const scope: TransactionScope = { commits: 0, beforeCommit: async (_trx, n) => void seen.push(n) }
  const db = failingDb('never')
  await runInTransactionScope(scope, async () => {
    await db.transaction().execute(async () => 1)
    await db.transaction().execute(async () => 2)
  })
  assert.equal([scope.commits, seen], [2, [1, 2]])
})

test('an ended scope is not the scope of work its request left running: background transactions neither record nor count', async () => {
  const seen: number[] = []
  const scope: TransactionScope = { commits: 0, beforeCommit: async (_trx, n) => void seen.push(n) }
  const db = failingDb('never')
  let later: Promise<unknown> = Promise.resolve()
  await runInTransactionScope(scope, async () => {
    await db.transaction().execute(async () => 1)
    later = new Promise((resolve) => setTimeout(resolve, 10)).then(() => db.transaction().execute(async () => 2))
  })
  scope.ended = true
  await later
  assert.equal([scope.commits, seen], [1, [1]])
})

test.run()

test('afterCommit runs once the transaction has committed, never for one that rolled back, and says false outside one', async () => {
  const order: string[] = []
  assert.is(
    afterCommit(() => order.push('outside')),
    false,
  )
  const committed = await failingDb('never')
    .transaction()
    .execute(async () => {
      assert.ok(afterCommit(() => order.push('after commit')))
      order.push('in the work')
      return 'done'
    })
  assert.equal([committed, order], ['done', ['in the work', 'after commit']])
  order.length = 0
  const refused = new Error('the work failed: rolled back')
  const rolledBack = await failingDb('never')
    .transaction()
    .execute(async () => {
      afterCommit(() => order.push('never'))
      throw refused
    })
    .catch((e: unknown) => e)
  assert.is(rolledBack, refused)
  assert.equal(order, [])
})

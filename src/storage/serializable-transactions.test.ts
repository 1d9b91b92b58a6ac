/**
 * The retry rule behind every transaction: a serialization failure or deadlock runs the work
 * again, a transaction that keeps losing ends as 409 `write_conflict`, and any other error passes
 * through at once.
 */
import { ApiError } from '../core/errors.ts'
import { assert, suite } from '../../tests/harness.ts'
import { MAX_TRANSACTION_ATTEMPTS, RetryableApiError, retryOnConflict } from './serializable-transactions.ts'

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

test.run()

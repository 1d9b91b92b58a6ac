/**
 * PostgreSQL transactions that keep SQLite's meaning. On SQLite every transaction runs alone on the
 * one connection, so a read-then-write inside a transaction (next version number, last owner,
 * "does this name exist") can never interleave with another. A PostgreSQL pool runs them side by
 * side, and its default READ COMMITTED would let two of them both read the old state and both write.
 * SERIALIZABLE makes PostgreSQL refuse one of them instead (SQLSTATE 40001, or 40P01 for a
 * deadlock); the refused one is run again from the start, up to a bound, and then sees the
 * winner's write, so it ends as the route's ordinary 409 rather than a lost update.
 *
 * A transaction callback may therefore run more than once: it must only touch the database (side
 * effects such as notifications belong after the transaction resolves).
 *
 * Every transaction also reports to the request's {@link TransactionScope} (transaction-scope.ts):
 * the scope's `beforeCommit` runs inside it, a commit is counted, and a connection lost while
 * COMMIT was on its way is never reported as "nothing was changed": the scope resolves it
 * (idempotency keys record each commit), or the answer is 503 `outcome_unknown`.
 * @module
 */
import { AsyncLocalStorage } from 'node:async_hooks'
import type { Kysely, Transaction } from 'kysely'
import { ApiError, DatabaseUnavailableError } from '../core/errors.ts'
import {
  currentCommitObserver,
  currentTransactionScope,
  outcomeUnknown,
  type TransactionScope,
} from './transaction-scope.ts'
import { isStalePlan } from './statement-names.ts'
import { coreError } from '../core/core-errors.ts'

/** Attempts before a transaction that keeps losing is answered 409 `write_conflict`. */
export const MAX_TRANSACTION_ATTEMPTS = 12

/**
 * An answer that is right only if the transaction really lost to a committed writer, thrown when a
 * unique constraint caught a concurrent insert (PostgreSQL reports that as 23505, not 40001, when
 * the transaction never read the conflicting row). The transaction runs again and reaches its
 * ordinary answer with the winner's state; if it still loses after the last attempt, or runs where
 * nothing retries, this is the answer (it is an {@link ApiError}).
 */
export class RetryableApiError extends ApiError {}

/**
 * True for PostgreSQL's serialization failure or deadlock, or a prepared statement made stale by a
 * schema change (open-postgres.ts renames it): the transaction can simply run again.
 */
export function isRetryableConflict(error: unknown): boolean {
  if (error instanceof RetryableApiError || isStalePlan(error)) return true
  const code = (error as { code?: unknown } | null)?.code
  return code === '40001' || code === '40P01'
}

function pause(attempt: number): Promise<void> {
  // Jittered exponential backoff, capped: contenders that collided should not collide again in step.
  const ceiling = Math.min(200, 4 * 2 ** attempt)
  return new Promise((resolve) => setTimeout(resolve, Math.random() * ceiling))
}

/** Runs `work` again on a retryable conflict, at most {@link MAX_TRANSACTION_ATTEMPTS} times. */
export async function retryOnConflict<T>(work: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work()
    } catch (error) {
      if (!isRetryableConflict(error)) throw error
      if (attempt >= MAX_TRANSACTION_ATTEMPTS) {
        if (error instanceof RetryableApiError) throw error
        throw coreError('write_conflict', 'Too many concurrent changes to the same data; retry the request', {
          headers: { 'retry-after': '1' },
        })
      }
      await pause(attempt)
    }
  }
}

interface Executable {
  execute<T>(callback: (trx: Transaction<any>) => Promise<T>): Promise<T>
}

/**
 * One attempt of a transaction, with what the request's scope needs: its `beforeCommit` last
 * inside the transaction, the commit counted, and a failure while COMMIT was on its way told
 * apart from one before it (which certainly rolled back).
 */
async function attempt<T>(
  target: Executable,
  callback: (trx: Transaction<any>) => Promise<T>,
  scope: TransactionScope | undefined,
): Promise<T> {
  let committing = false
  let result: T | undefined
  const commitNumber = (scope?.commits ?? 0) + 1
  const observer = currentCommitObserver()
  try {
    await target.execute(async (trx) => {
      result = await callback(trx)
      if (observer) await observer.beforeCommit(trx)
      if (scope?.beforeCommit) await scope.beforeCommit(trx, commitNumber)
      committing = true
    })
  } catch (error) {
    if (!committing || !(error instanceof DatabaseUnavailableError)) {
      observer?.rolledBack()
      throw error
    }
    // The connection failed while COMMIT was on its way: it may have taken effect.
    if (!scope?.resolveCommit) {
      observer?.rolledBack()
      throw outcomeUnknown()
    }
    let committed: boolean
    try {
      committed = await scope.resolveCommit(commitNumber)
    } catch {
      observer?.rolledBack()
      throw outcomeUnknown()
    }
    if (!committed) {
      observer?.rolledBack()
      throw error
    }
  }
  if (scope) scope.commits = commitNumber
  observer?.committed()
  return result as T
}

/** What the transaction running in this async context does once it has committed. */
const afterCommitQueue = new AsyncLocalStorage<Array<() => void>>()

/**
 * Runs `run` once the transaction of the calling async context has committed (never when it rolls
 * back; a retried attempt starts a fresh queue), and answers true; answers false outside a
 * transaction of a {@link retryingTransactions} handle. Why: SQLite has no NOTIFY, and a wake-up
 * sent while the transaction is still open reaches readers on the other connection before the
 * rows do, so a reader woken then finds nothing and waits for its next poll.
 */
export function afterCommit(run: () => void): boolean {
  const queue = afterCommitQueue.getStore()
  if (!queue) return false
  queue.push(run)
  return true
}

/**
 * Makes every `db.transaction()` of this handle retried on conflict and, on PostgreSQL,
 * SERIALIZABLE. Patched on the instance so every existing call site gets it unchanged.
 */
export function retryingTransactions<DB>(db: Kysely<DB>, options: { serializable: boolean }): Kysely<DB> {
  const original = db.transaction.bind(db)
  db.transaction = () => {
    const builder = options.serializable ? original().setIsolationLevel('serializable') : original()
    return new Proxy(builder, {
      get(target, property) {
        if (property === 'execute') {
          return <T>(callback: (trx: Transaction<any>) => Promise<T>) => {
            const scope = currentTransactionScope()
            return retryOnConflict(async () => {
              const committed: Array<() => void> = []
              const result = await afterCommitQueue.run(committed, () => attempt(target as Executable, callback, scope))
              for (const run of committed) run()
              return result
            })
          }
        }
        const value = Reflect.get(target, property)
        return typeof value === 'function' ? value.bind(target) : value
      },
    })
  }
  return db
}

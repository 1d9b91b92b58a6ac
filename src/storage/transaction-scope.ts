/**
 * What a request's transactions tell the request: how many committed, and what to do just before
 * each COMMIT. A write request runs its handler inside a {@link TransactionScope}
 * (AsyncLocalStorage, so the handler's own `db.transaction()` calls find it without being passed
 * anything); `serializable-transactions.ts` reads it on every transaction.
 *
 * Why: a handler commits, then may still fail (a lost connection while it builds its answer), and
 * a connection can die while COMMIT is on its way, when nobody knows whether it took effect. The
 * HTTP layer must tell a client "nothing was changed" only when that is true, and an idempotency
 * key must be recorded by the very transaction that makes the write, so a crash can never separate
 * "written" from "key recorded".
 * @module
 */
import { AsyncLocalStorage } from 'node:async_hooks'
import type { Kysely } from 'kysely'
import { coreError } from '../core/core-errors.ts'
import type { ApiError } from '../core/errors.ts'

/** The transactions of one request, as far as the request needs to know them. */
export interface TransactionScope {
  /** Transactions of this request that certainly committed. */
  commits: number
  /**
   * Runs inside each transaction of the request after its work and just before COMMIT (it may
   * run more than once, as the transaction may). Throwing rolls the transaction back.
   */
  beforeCommit?: (trx: Kysely<any>, commitNumber: number) => Promise<void>
  /**
   * Called when the connection failed while COMMIT number `commitNumber` was on its way: true
   * when it committed, false when it certainly did not; throws when that cannot be told now.
   */
  resolveCommit?: (commitNumber: number) => Promise<boolean>
  /**
   * Set once the request has its answer. Work the request started in the background (a job, a
   * timer) inherits the scope through AsyncLocalStorage; its transactions are not the request's.
   */
  ended?: boolean
}

const scopes = new AsyncLocalStorage<TransactionScope>()

/** Runs `work` with `scope` as the scope of every transaction it starts. */
export function runInTransactionScope<T>(scope: TransactionScope, work: () => T): T {
  return scopes.run(scope, work)
}

/** The scope of the request running now, if any. */
export function currentTransactionScope(): TransactionScope | undefined {
  const scope = scopes.getStore()
  return scope?.ended ? undefined : scope
}

/**
 * True when the request's commits are recorded (an idempotency key): a write that would otherwise
 * run as one statement outside a transaction must then run inside one, so the record commits with it.
 */
export function commitsAreRecorded(): boolean {
  return currentTransactionScope()?.beforeCommit !== undefined
}

/**
 * 503 `outcome_unknown`: the connection was lost while COMMIT was on its way (or after a commit,
 * while the answer was built), so the change may or may not have been made.
 */
export function outcomeUnknown(): ApiError {
  return coreError(
    'outcome_unknown',
    'The database connection was lost while the change was being committed; it may or may not have been made. Retry with the same Idempotency-Key to get its outcome',
    { headers: { 'retry-after': '1' } },
  )
}

/**
 * Told about every transaction of a request, whatever its {@link TransactionScope}: work to run
 * just before each COMMIT (it may run more than once, as the transaction may), and whether the
 * attempt committed or rolled back. Why: a record that must commit with the request's change (its
 * audit event) is written by the same transaction, without every handler passing it along.
 */
export interface CommitObserver {
  beforeCommit(trx: Kysely<any>): Promise<void>
  committed(): void
  rolledBack(): void
  /** Set once the request has its answer; background work it started is not observed. */
  ended?: boolean
}

const observers = new AsyncLocalStorage<CommitObserver>()

/** Runs `work` with `observer` told about every transaction it starts. */
export function observeCommits<T>(observer: CommitObserver, work: () => T): T {
  return observers.run(observer, work)
}

/** The observer of the request running now, if any. */
export function currentCommitObserver(): CommitObserver | undefined {
  const observer = observers.getStore()
  return observer?.ended ? undefined : observer
}

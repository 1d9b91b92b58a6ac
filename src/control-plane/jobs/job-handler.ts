/**
 * What a kind of job implements, and what each of its attempts receives: the contract between
 * the durable job runner (job-runner.ts) and the domain code that registers with it (discovery,
 * sync, Worker provisioning).
 * @module
 */
import type { Transaction } from 'kysely'
import type { ControlPlaneDb } from '../schema.ts'
import type { JobTable } from './job-tables.ts'

/** What a handler receives for one attempt. */
export interface JobContext<P> {
  readonly job: Readonly<JobTable>
  readonly payload: P
  /** 1-based attempt number. */
  readonly attempt: number
  readonly isLastAttempt: boolean
  /** Aborted at the deadline, on lease loss and on stop. */
  readonly signal: AbortSignal
  /** Runs `fn` in a transaction that first checks this attempt still holds the job. */
  commit<R>(fn: (trx: Transaction<ControlPlaneDb>) => Promise<R>): Promise<R>
  /**
   * Like {@link commit}, and marks the job succeeded (with `fn`'s result) in the same
   * transaction, so the domain object and the job can never disagree about completion.
   */
  finish<R>(fn: (trx: Transaction<ControlPlaneDb>) => Promise<R>): Promise<R>
}

/** A failure as handlers see it when an attempt fails. */
export interface AttemptFailure {
  reason: string
  message: string
  /** True when the job ends failed (no more attempts). */
  final: boolean
  /** When the next attempt runs (null when final). */
  nextRunAt: string | null
}

/** A kind of job. */
export interface JobHandler<P = unknown> {
  kind: string
  /** Runs one attempt; the returned value is stored as the job's result (JSON). */
  run(ctx: JobContext<P>): Promise<unknown>
  /**
   * Called in the transaction that records a failed attempt, so the domain object (a sync event,
   * a Worker) shows the same state and reason as the job.
   */
  onFailure?(trx: Transaction<ControlPlaneDb>, job: Readonly<JobTable>, failure: AttemptFailure): Promise<void>
  /** Called in the transaction that puts a failed job back in the queue through the API. */
  onRetry?(trx: Transaction<ControlPlaneDb>, job: Readonly<JobTable>): Promise<void>
}

/**
 * The durable job runner: one loop in the control plane that runs discovery, sync and Worker
 * provisioning from the `job` table, so work accepted with a 202 is not lost to a restart.
 *
 * - Claim: compare-and-set on (id, status, attempts), so two runners (or two processes on one
 *   database) never run the same attempt.
 * - Lease: a claimed job carries `lease_until`, renewed while it runs. A runner that dies stops
 *   renewing; once the lease lapses any runner claims the job again (resume after a crash).
 * - Deadline: every attempt has one; past it the attempt is aborted and counts as a retriable
 *   failure with reason `deadline_exceeded`.
 * - Retry: a retriable failure goes back to `queued` after capped exponential backoff with
 *   jitter; the last allowed attempt, or a non-retriable failure, ends `failed` with its reason.
 * - Fencing: every write a handler makes through {@link JobContext.commit} checks in the same
 *   transaction that this attempt still holds the job, so a stale attempt cannot complete work
 *   twice.
 * - Stop: `stop()` stops claiming, gives running attempts a short grace, then aborts them and
 *   hands their jobs back (`queued`, the attempt not counted) so the next start resumes them.
 * @module
 */
import type { Kysely, Transaction } from 'kysely'
import { randomBytes } from 'node:crypto'
import type { Logger } from '../../core/logger.ts'
import type { ControlPlaneDb } from '../schema.ts'
import { backoffDelay, type BackoffPolicy } from './backoff.ts'
import { iso, JobFailure, LeaseLost, shortMessage } from './job-queue.ts'
import type { Db } from '../schema.ts'
import type { JobTable } from './job-tables.ts'

/** Runner settings (configuration `jobs.*`). */
export interface JobRunnerSettings {
  /** How often the loop looks for due work when nothing woke it. */
  pollIntervalMs: number
  /** How long a claim holds without renewal; renewed every third of it. */
  leaseMs: number
  /** Retry backoff. */
  backoff: BackoffPolicy
  /** Attempts running at once. */
  concurrency: number
  /** Grace for running attempts on stop before they are aborted and handed back. */
  stopGraceMs: number
}

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

interface Active {
  job: JobTable
  controller: AbortController
  done: Promise<void>
}

/** The runner. Create one per control plane; `start()` after migrations, `stop()` in close(). */

/** What a job row says when its attempt threw something other than a JobFailure. */
export const UNEXPECTED_FAILURE = 'Unexpected error while running the job; details are in the server log'

export class JobRunner {
  readonly id = `run_${randomBytes(6).toString('hex')}`
  readonly #db: Kysely<ControlPlaneDb>
  readonly #now: () => number
  readonly #settings: JobRunnerSettings
  readonly #log: Logger
  readonly #handlers = new Map<string, JobHandler<never>>()
  readonly #active = new Map<string, Active>()
  readonly #periodic: Array<{ everyMs: number; nextAt: number; run: () => Promise<void>; name: string }> = []
  #timer: ReturnType<typeof setTimeout> | undefined
  #running = false
  #ticking: Promise<void> | null = null
  #again = false

  constructor(options: { db: Kysely<ControlPlaneDb>; now: () => number; settings: JobRunnerSettings; logger: Logger }) {
    this.#db = options.db
    this.#now = options.now
    this.#settings = options.settings
    this.#log = options.logger
  }

  /** Registers a job kind. */
  register<P>(handler: JobHandler<P>): void {
    this.#handlers.set(handler.kind, handler as JobHandler<never>)
  }

  /** The handler of a kind, if registered. */
  handler(kind: string): JobHandler<never> | undefined {
    return this.#handlers.get(kind)
  }

  /** Registers housekeeping that runs on the loop every `everyMs` (Worker sweeps). */
  every(name: string, everyMs: number, run: () => Promise<void>): void {
    this.#periodic.push({ name, everyMs, nextAt: 0, run })
  }

  /** Starts the loop. */
  start(): void {
    if (this.#running) return
    this.#running = true
    this.wake()
  }

  /** True while the loop runs. */
  get running(): boolean {
    return this.#running
  }

  /** Jobs this runner is executing now. */
  get activeCount(): number {
    return this.#active.size
  }

  /** Looks for work now (after an enqueue) instead of at the next poll. */
  wake(): void {
    if (!this.#running) return
    if (this.#ticking) {
      this.#again = true
      return
    }
    clearTimeout(this.#timer)
    this.#ticking = this.#tick().finally(() => {
      this.#ticking = null
      if (!this.#running) return
      if (this.#again) {
        this.#again = false
        this.wake()
        return
      }
      this.#timer = setTimeout(() => this.wake(), this.#settings.pollIntervalMs)
    })
  }

  async #tick(): Promise<void> {
    const now = this.#now()
    for (const task of this.#periodic) {
      if (now < task.nextAt) continue
      task.nextAt = now + task.everyMs
      try {
        await task.run()
      } catch (error) {
        this.#log.warn('periodic task failed', { task: task.name, error: (error as Error).message })
      }
    }
    while (this.#running && this.#active.size < this.#settings.concurrency) {
      let job: JobTable | null
      try {
        job = await this.#claim()
      } catch (error) {
        this.#log.warn('job claim failed', { error: (error as Error).message })
        return
      }
      if (!job) return
      this.#execute(job)
    }
  }

  /** Claims the next due job (queued and due, or running with a lapsed lease), or null. */
  async #claim(): Promise<JobTable | null> {
    const kinds = [...this.#handlers.keys()]
    if (kinds.length === 0) return null
    for (let tries = 0; tries < 5; tries++) {
      const now = iso(this.#now())
      const candidate = await this.#db
        .selectFrom('job')
        .selectAll()
        .where((eb) =>
          eb.or([
            eb.and([eb('status', '=', 'queued'), eb('run_at', '<=', now)]),
            eb.and([eb('status', '=', 'running'), eb('lease_until', '<', now)]),
          ]),
        )
        .where('kind', 'in', kinds)
        .orderBy('run_at')
        .orderBy('id')
        .limit(1)
        .executeTakeFirst()
      if (!candidate) return null
      if (candidate.status === 'running' && candidate.attempts >= candidate.max_attempts) {
        // Its last attempt died with its runner (a job that keeps killing the process must not
        // be retried forever): end it here with that reason.
        await this.#abandon(candidate)
        continue
      }
      const leaseUntil = iso(this.#now() + this.#settings.leaseMs)
      const updated = await this.#db
        .updateTable('job')
        .set({
          status: 'running',
          attempts: candidate.attempts + 1,
          locked_by: this.id,
          lease_until: leaseUntil,
          started_at: candidate.started_at ?? now,
          updated_at: now,
        })
        .where('id', '=', candidate.id)
        .where('status', '=', candidate.status)
        .where('attempts', '=', candidate.attempts)
        .executeTakeFirst()
      if (Number(updated.numUpdatedRows) === 1) {
        if (candidate.status === 'running')
          this.#log.info('job resumed after a lapsed lease', {
            jobId: candidate.id,
            kind: candidate.kind,
            previousRunner: candidate.locked_by,
          })
        return {
          ...candidate,
          status: 'running',
          attempts: candidate.attempts + 1,
          locked_by: this.id,
          lease_until: leaseUntil,
        }
      }
    }
    return null
  }

  /** Ends a job whose last attempt's runner vanished (lease lapsed) as failed. */
  async #abandon(job: JobTable): Promise<void> {
    const handler = this.#handlers.get(job.kind)!
    const now = this.#now()
    const message = `the runner of attempt ${job.attempts} stopped without finishing it (lease lapsed) and no attempts are left`
    await this.#db.transaction().execute(async (trx) => {
      const moved = await trx
        .updateTable('job')
        .set({
          status: 'failed',
          locked_by: null,
          lease_until: null,
          last_error: message,
          last_reason: 'lease_lapsed',
          finished_at: iso(now),
          updated_at: iso(now),
        })
        .where('id', '=', job.id)
        .where('status', '=', 'running')
        .where('attempts', '=', job.attempts)
        .where('lease_until', '=', job.lease_until)
        .executeTakeFirst()
      if (Number(moved.numUpdatedRows) !== 1) return
      await handler.onFailure?.(trx, job, { reason: 'lease_lapsed', message, final: true, nextRunAt: null })
    })
    this.#log.warn('job abandoned after its last attempt lost its runner', { jobId: job.id, kind: job.kind })
  }

  /** True inside `trx` when this attempt still holds the job. */
  async #holds(trx: Db, job: JobTable): Promise<boolean> {
    const row = await trx
      .selectFrom('job')
      .select(['status', 'locked_by', 'attempts'])
      .where('id', '=', job.id)
      .executeTakeFirst()
    return !!row && row.status === 'running' && row.locked_by === this.id && row.attempts === job.attempts
  }

  #execute(job: JobTable): void {
    const handler = this.#handlers.get(job.kind)!
    const controller = new AbortController()
    const deadline = setTimeout(
      () =>
        controller.abort(
          new JobFailure('deadline_exceeded', `the attempt did not finish within ${job.deadline_ms} ms`),
        ),
      job.deadline_ms,
    )
    const renew = setInterval(
      () => {
        void this.#db
          .updateTable('job')
          .set({ lease_until: iso(this.#now() + this.#settings.leaseMs) })
          .where('id', '=', job.id)
          .where('locked_by', '=', this.id)
          .where('attempts', '=', job.attempts)
          .where('status', '=', 'running')
          .executeTakeFirst()
          .then((r) => {
            if (Number(r.numUpdatedRows) === 0) controller.abort(new LeaseLost())
          })
          .catch(() => {})
      },
      Math.max(10, Math.floor(this.#settings.leaseMs / 3)),
    )
    const commit = <R>(fn: (trx: Transaction<ControlPlaneDb>) => Promise<R>): Promise<R> =>
      this.#db.transaction().execute(async (trx) => {
        if (controller.signal.aborted || !(await this.#holds(trx, job))) throw new LeaseLost()
        return fn(trx)
      })
    let finished = false
    const finish = <R>(fn: (trx: Transaction<ControlPlaneDb>) => Promise<R>): Promise<R> =>
      commit(async (trx) => {
        const result = await fn(trx)
        const now = iso(this.#now())
        await trx
          .updateTable('job')
          .set({
            status: 'succeeded',
            result: result === undefined ? null : JSON.stringify(result),
            lease_until: null,
            finished_at: now,
            updated_at: now,
            last_error: null,
            last_reason: null,
          })
          .where('id', '=', job.id)
          .execute()
        finished = true
        return result
      })
    const ctx: JobContext<never> = {
      job,
      payload: JSON.parse(job.payload) as never,
      attempt: job.attempts,
      isLastAttempt: job.attempts >= job.max_attempts,
      signal: controller.signal,
      commit,
      finish,
    }
    const aborted = new Promise<never>((_, reject) => {
      controller.signal.addEventListener('abort', () => reject(controller.signal.reason), { once: true })
    })
    const done = (async () => {
      try {
        const result = await Promise.race([handler.run(ctx), aborted])
        if (!finished) await this.#succeed(job, result)
      } catch (error) {
        await this.#fail(job, handler, error)
      } finally {
        clearTimeout(deadline)
        clearInterval(renew)
        this.#active.delete(job.id)
        if (this.#running) this.wake()
      }
    })()
    this.#active.set(job.id, { job, controller, done })
  }

  async #succeed(job: JobTable, result: unknown): Promise<void> {
    const now = iso(this.#now())
    await this.#db
      .updateTable('job')
      .set({
        status: 'succeeded',
        result: result === undefined ? null : JSON.stringify(result),
        lease_until: null,
        finished_at: now,
        updated_at: now,
        last_error: null,
        last_reason: null,
      })
      .where('id', '=', job.id)
      .where('locked_by', '=', this.id)
      .where('attempts', '=', job.attempts)
      .where('status', '=', 'running')
      .execute()
  }

  async #fail(job: JobTable, handler: JobHandler<never>, error: unknown): Promise<void> {
    if (error instanceof LeaseLost || error instanceof StopAbort) return
    // An unexpected exception's text (SQL errors, file paths, key ids) stays in the server log; the
    // job row, which members read through the job and sync-event routes, gets a fixed message.
    if (!(error instanceof JobFailure))
      this.#log.warn('job attempt threw', {
        jobId: job.id,
        kind: job.kind,
        error: (error as Error)?.message ?? String(error),
      })
    const failure = error instanceof JobFailure ? error : new JobFailure('internal_error', UNEXPECTED_FAILURE)
    const final = !failure.retriable || job.attempts >= job.max_attempts
    const now = this.#now()
    const nextRunAt = final ? null : iso(now + backoffDelay(this.#settings.backoff, job.attempts))
    const message = shortMessage(failure.message)
    try {
      await this.#db.transaction().execute(async (trx) => {
        if (!(await this.#holds(trx, job))) return
        await trx
          .updateTable('job')
          .set({
            status: final ? 'failed' : 'queued',
            run_at: nextRunAt ?? job.run_at,
            locked_by: null,
            lease_until: null,
            last_error: message,
            last_reason: failure.reason,
            finished_at: final ? iso(now) : null,
            updated_at: iso(now),
          })
          .where('id', '=', job.id)
          .execute()
        await handler.onFailure?.(trx, job, { reason: failure.reason, message, final, nextRunAt })
      })
    } catch (writeError) {
      this.#log.error('recording a job failure failed', { jobId: job.id, error: (writeError as Error).message })
    }
  }

  /**
   * Stops claiming, waits up to the grace for running attempts, then aborts the rest and hands
   * their jobs back to the queue (the interrupted attempt is not counted).
   */
  async stop(): Promise<void> {
    this.#running = false
    clearTimeout(this.#timer)
    if (this.#ticking) await this.#ticking.catch(() => {})
    const pending = [...this.#active.values()]
    if (pending.length === 0) return
    const grace = new Promise<void>((resolve) => setTimeout(resolve, this.#settings.stopGraceMs))
    await Promise.race([Promise.all(pending.map((a) => a.done)), grace])
    const still = [...this.#active.values()]
    for (const active of still) active.controller.abort(new StopAbort())
    const now = iso(this.#now())
    for (const active of still) {
      await this.#db
        .updateTable('job')
        .set({
          status: 'queued',
          attempts: Math.max(0, active.job.attempts - 1),
          run_at: now,
          locked_by: null,
          lease_until: null,
          updated_at: now,
        })
        .where('id', '=', active.job.id)
        .where('locked_by', '=', this.id)
        .where('attempts', '=', active.job.attempts)
        .where('status', '=', 'running')
        .execute()
        .catch(() => {})
    }
    await Promise.all(still.map((a) => a.done.catch(() => {})))
  }
}

/** The abort reason used by stop(): not a failure of the job. */
class StopAbort extends Error {
  constructor() {
    super('the control plane is stopping')
    this.name = 'StopAbort'
  }
}

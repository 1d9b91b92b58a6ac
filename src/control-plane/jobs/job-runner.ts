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
import type { JobContext, JobHandler } from './job-handler.ts'
import { JobLeases } from './job-leases.ts'
import { iso, JobFailure, LeaseLost, shortMessage } from './job-queue.ts'
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

interface Active {
  job: JobTable
  controller: AbortController
  done: Promise<void>
}

/** What a job row says when its attempt threw something other than a JobFailure. */
export const UNEXPECTED_FAILURE = 'Unexpected error while running the job; details are in the server log'

/** The runner. Create one per control plane; `start()` after migrations, `stop()` in close(). */
export class JobRunner {
  readonly id = `run_${randomBytes(6).toString('hex')}`
  readonly #db: Kysely<ControlPlaneDb>
  readonly #now: () => number
  readonly #settings: JobRunnerSettings
  readonly #log: Logger
  readonly #leases: JobLeases
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
    this.#leases = new JobLeases(options, this.id, options.settings.leaseMs)
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
        job = await this.#leases.claim(this.#handlers)
      } catch (error) {
        this.#log.warn('job claim failed', { error: (error as Error).message })
        return
      }
      if (!job) return
      this.#execute(job)
    }
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
        void this.#leases
          .renew(job)
          .then((held) => {
            if (!held) controller.abort(new LeaseLost())
          })
          .catch(() => {})
      },
      Math.max(10, Math.floor(this.#settings.leaseMs / 3)),
    )
    const commit = <R>(fn: (trx: Transaction<ControlPlaneDb>) => Promise<R>): Promise<R> =>
      this.#db.transaction().execute(async (trx) => {
        if (controller.signal.aborted || !(await this.#leases.holds(trx, job))) throw new LeaseLost()
        return fn(trx)
      })
    let finished = false
    const finish = <R>(fn: (trx: Transaction<ControlPlaneDb>) => Promise<R>): Promise<R> =>
      commit(async (trx) => {
        const result = await fn(trx)
        await this.#leases.finishIn(trx, job, result)
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
        if (!finished) await this.#leases.succeed(job, result)
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
        if (!(await this.#leases.holds(trx, job))) return
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
    for (const active of still) await this.#leases.handBack(active.job, now).catch(() => {})
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

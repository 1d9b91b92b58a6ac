/**
 * The `job` row writes of one runner's attempts: claiming the next due job by compare-and-set on
 * (id, status, attempts), renewing and checking the lease, and the updates that end an attempt or
 * hand it back. Every write names the attempt it is for, so a stale attempt changes nothing.
 * @module
 */
import type { Kysely, Transaction } from 'kysely'
import type { Logger } from '../../core/logger.ts'
import type { ControlPlaneDb, Db } from '../schema.ts'
import type { JobHandler } from './job-handler.ts'
import { iso } from './job-queue.ts'
import type { JobTable } from './job-tables.ts'

/** The lease side of one runner (`runnerId` is what `locked_by` holds). */
export class JobLeases {
  readonly #db: Kysely<ControlPlaneDb>
  readonly #now: () => number
  readonly #log: Logger

  constructor(
    options: { db: Kysely<ControlPlaneDb>; now: () => number; logger: Logger },
    private readonly runnerId: string,
    private readonly leaseMs: number,
  ) {
    this.#db = options.db
    this.#now = options.now
    this.#log = options.logger
  }

  /** Claims the next due job (queued and due, or running with a lapsed lease), or null. */
  async claim(handlers: ReadonlyMap<string, JobHandler<never>>): Promise<JobTable | null> {
    const kinds = [...handlers.keys()]
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
        await this.#abandon(candidate, handlers.get(candidate.kind)!)
        continue
      }
      const leaseUntil = iso(this.#now() + this.leaseMs)
      const updated = await this.#db
        .updateTable('job')
        .set({
          status: 'running',
          attempts: candidate.attempts + 1,
          locked_by: this.runnerId,
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
          locked_by: this.runnerId,
          lease_until: leaseUntil,
        }
      }
    }
    return null
  }

  /** Ends a job whose last attempt's runner vanished (lease lapsed) as failed. */
  async #abandon(job: JobTable, handler: JobHandler<never>): Promise<void> {
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

  /** Extends the attempt's lease; false when the attempt no longer holds the job. */
  async renew(job: JobTable): Promise<boolean> {
    const r = await this.#db
      .updateTable('job')
      .set({ lease_until: iso(this.#now() + this.leaseMs) })
      .where('id', '=', job.id)
      .where('locked_by', '=', this.runnerId)
      .where('attempts', '=', job.attempts)
      .where('status', '=', 'running')
      .executeTakeFirst()
    return Number(r.numUpdatedRows) !== 0
  }

  /** True inside `trx` when this attempt still holds the job. */
  async holds(trx: Db, job: JobTable): Promise<boolean> {
    const row = await trx
      .selectFrom('job')
      .select(['status', 'locked_by', 'attempts'])
      .where('id', '=', job.id)
      .executeTakeFirst()
    return !!row && row.status === 'running' && row.locked_by === this.runnerId && row.attempts === job.attempts
  }

  /** Marks the job succeeded inside a transaction that checked {@link holds}. */
  async finishIn(trx: Transaction<ControlPlaneDb>, job: JobTable, result: unknown): Promise<void> {
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
  }

  /** Marks the job succeeded when this attempt still holds it. */
  async succeed(job: JobTable, result: unknown): Promise<void> {
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
      .where('locked_by', '=', this.runnerId)
      .where('attempts', '=', job.attempts)
      .where('status', '=', 'running')
      .execute()
  }

  /** Puts an interrupted attempt's job back in the queue at `now` (ISO), the attempt not counted. */
  async handBack(job: JobTable, now: string): Promise<void> {
    await this.#db
      .updateTable('job')
      .set({
        status: 'queued',
        attempts: Math.max(0, job.attempts - 1),
        run_at: now,
        locked_by: null,
        lease_until: null,
        updated_at: now,
      })
      .where('id', '=', job.id)
      .where('locked_by', '=', this.runnerId)
      .where('attempts', '=', job.attempts)
      .where('status', '=', 'running')
      .execute()
  }
}

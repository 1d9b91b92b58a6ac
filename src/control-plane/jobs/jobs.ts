/**
 * Jobs as the API shows them: list and read an organization's jobs, and put a failed one back in
 * the queue. The retriable object for connectors is the sync event (its route calls
 * {@link retryJob} too); this is the generic view for operators.
 * @module
 */
import type { Transaction } from 'kysely'
import { recordAudit, type Actor } from '../admin/audit.ts'
import type { Deps } from '../deps.ts'
import { keysetPage, type Page } from '../pagination.ts'
import type { ControlPlaneDb } from '../schema.ts'
import { requeueJob, type JobState } from './job-queue.ts'
import type { JobRunner } from './job-runner.ts'
import type { JobTable } from './job-tables.ts'
import { controlPlaneError } from '../control-plane-errors.ts'

/** A job as the API shows it (never its payload: it may name internal paths). */
export interface JobView {
  id: string
  kind: string
  subjectId: string | null
  status: JobState
  attempts: number
  maxAttempts: number
  deadlineMs: number
  runAt: string
  lastError: { reason: string; message: string } | null
  createdAt: string
  updatedAt: string
  startedAt: string | null
  finishedAt: string | null
}

/** Maps a row to its view. */
export function jobView(row: JobTable): JobView {
  return {
    id: row.id,
    kind: row.kind,
    subjectId: row.subject_id,
    status: row.status as JobState,
    attempts: row.attempts,
    maxAttempts: row.max_attempts,
    deadlineMs: row.deadline_ms,
    runAt: row.run_at,
    lastError: row.last_reason ? { reason: row.last_reason, message: row.last_error ?? '' } : null,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    startedAt: row.started_at,
    finishedAt: row.finished_at,
  }
}

const jobNotFound = () => controlPlaneError('job_not_found', 'Job not found')

/** The organization's jobs, newest first. */
export function listJobs(
  deps: Deps,
  orgId: string,
  query: { cursor?: string; limit: number; status?: string; kind?: string },
): Promise<Page<JobView>> {
  let q = deps.db.selectFrom('job').selectAll().where('org_id', '=', orgId)
  if (query.status) q = q.where('status', '=', query.status)
  if (query.kind) q = q.where('kind', '=', query.kind)
  return keysetPage(q, {
    scope: 'jobs',
    cursor: query.cursor,
    limit: query.limit,
    order: [{ column: 'id', field: 'id', direction: 'desc' }],
    map: jobView,
  })
}

/** One job of the organization. */
export async function getJob(deps: Deps, orgId: string, jobId: string): Promise<JobView> {
  const row = await deps.db
    .selectFrom('job')
    .selectAll()
    .where('id', '=', jobId)
    .where('org_id', '=', orgId)
    .executeTakeFirst()
  if (!row) throw jobNotFound()
  return jobView(row)
}

/**
 * Puts a failed job back in the queue inside `trx` (409 `job_not_retriable` unless failed or
 * canceled) and lets its handler reset the domain object.
 */
export async function retryJobIn(
  deps: Deps,
  trx: Transaction<ControlPlaneDb>,
  runner: JobRunner,
  row: JobTable,
): Promise<void> {
  if (!(await requeueJob(trx, deps.now(), row.id))) {
    throw controlPlaneError(
      'job_not_retriable',
      `Only failed or canceled jobs can be retried; this one is ${row.status}`,
      { details: { status: row.status } },
    )
  }
  await runner.handler(row.kind)?.onRetry?.(trx, row)
}

/** `POST /v1/jobs/:id/retry`. */
export async function retryJob(deps: Deps, runner: JobRunner, actor: Actor, jobId: string): Promise<JobView> {
  await deps.db.transaction().execute(async (trx) => {
    const row = await trx
      .selectFrom('job')
      .selectAll()
      .where('id', '=', jobId)
      .where('org_id', '=', actor.orgId)
      .executeTakeFirst()
    if (!row) throw jobNotFound()
    await retryJobIn(deps, trx, runner, row)
    await recordAudit(deps, trx, actor, 'job.retried', { type: 'job', id: jobId }, { kind: row.kind })
  })
  runner.wake()
  return getJob(deps, actor.orgId, jobId)
}

import type { Transaction } from 'kysely'
import { newId } from '../../core/ids.ts'
import { recordAudit, type Actor } from '../admin/audit.ts'
import { visibleCondition } from '../catalog/visibility-sql.ts'
import { isoAt } from '../deps.ts'
import type { AsyncContext } from '../jobs/async-context.ts'
import { enqueueJob } from '../jobs/job-queue.ts'
import { retryJobIn } from '../jobs/jobs.ts'
import { keysetPage, type Page } from '../pagination.ts'
import type { ControlPlaneDb } from '../schema.ts'
import type { ConnectorSyncEventTable } from './connector-tables.ts'
import { targetFor } from './connector-targets.ts'
import { controlPlaneError } from '../control-plane-errors.ts'

/** Sync event states. */
export const SYNC_STATES = ['queued', 'running', 'completed', 'partial', 'failed'] as const
/** A sync event state. */
export type SyncState = (typeof SYNC_STATES)[number]
/** The sync job kind. */
export const SYNC_JOB = 'connector.sync'

/** One item that could not be imported. */
export interface SyncFailure {
  path: string
  reason: string
  message: string
}

/** A sync event as the API shows it. */
export interface SyncEventView {
  id: string
  connectorInstanceId: string
  connectorTargetId: string
  eventType: string
  status: SyncState
  sourceRevision: string | null
  counts: {
    total: number
    processed: number
    created: number
    updated: number
    unchanged: number
    deleted: number
    failed: number
  }
  failures: SyncFailure[]
  error: { reason: string; message: string } | null
  attemptCount: number
  nextAttemptAt: string | null
  jobId: string | null
  createdAt: string
  updatedAt: string
  startedAt: string | null
  completedAt: string | null
}

const eventNotFound = () => controlPlaneError('connector_sync_event_not_found', 'Sync event not found')

function eventView(row: ConnectorSyncEventTable): SyncEventView {
  return {
    id: row.id,
    connectorInstanceId: row.instance_id,
    connectorTargetId: row.target_id,
    eventType: row.event_type,
    status: row.status as SyncState,
    sourceRevision: row.source_revision,
    counts: {
      total: row.total_count,
      processed: row.processed_count,
      created: row.created_count,
      updated: row.updated_count,
      unchanged: row.unchanged_count,
      deleted: row.deleted_count,
      failed: row.failed_count,
    },
    failures: row.failures ? (JSON.parse(row.failures) as SyncFailure[]) : [],
    error: row.error_reason ? { reason: row.error_reason, message: row.error_message ?? '' } : null,
    attemptCount: row.attempt_count,
    nextAttemptAt: row.next_attempt_at,
    jobId: row.job_id,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    startedAt: row.started_at,
    completedAt: row.completed_at,
  }
}

async function enqueueSync(
  ctx: AsyncContext,
  trx: Transaction<ControlPlaneDb>,
  orgId: string,
  eventId: string,
): Promise<string> {
  const jobId = await enqueueJob(trx, ctx.deps.now(), {
    kind: SYNC_JOB,
    orgId,
    subjectId: eventId,
    payload: { syncEventId: eventId },
    maxAttempts: ctx.settings.connectors.maxAttempts,
    deadlineMs: ctx.settings.connectors.syncDeadlineMs,
  })
  await trx.updateTable('connector_sync_event').set({ job_id: jobId }).where('id', '=', eventId).execute()
  return jobId
}

/** Queues a sync of a target (editor); 409 `sync_in_progress` while one is queued or running. */
export async function requestSync(ctx: AsyncContext, actor: Actor, targetId: string): Promise<SyncEventView> {
  const target = await targetFor(ctx, actor, targetId, 'editor')
  const id = newId('cse')
  await ctx.deps.db.transaction().execute(async (trx) => {
    const instance = await trx
      .selectFrom('connector_instance')
      .select('status')
      .where('id', '=', target.instance_id)
      .executeTakeFirstOrThrow()
    if (instance.status !== 'active')
      throw controlPlaneError('connector_instance_disabled', 'The connector instance is disabled; enable it to sync', {
        details: {
          status: instance.status,
        },
      })
    const busy = await trx
      .selectFrom('connector_sync_event')
      .select('id')
      .where('target_id', '=', targetId)
      .where('status', 'in', ['queued', 'running'])
      .executeTakeFirst()
    if (busy)
      throw controlPlaneError(
        'sync_in_progress',
        'A sync of this target is already queued or running; re-read it by id',
        { details: { syncEventId: busy.id } },
      )
    const now = isoAt(ctx.deps)
    await trx
      .insertInto('connector_sync_event')
      .values({
        id,
        org_id: actor.orgId,
        instance_id: target.instance_id,
        target_id: targetId,
        event_type: 'manual',
        status: 'queued',
        source_revision: null,
        total_count: 0,
        processed_count: 0,
        created_count: 0,
        updated_count: 0,
        unchanged_count: 0,
        deleted_count: 0,
        failed_count: 0,
        failures: null,
        error_reason: null,
        error_message: null,
        attempt_count: 0,
        next_attempt_at: null,
        job_id: null,
        triggered_by_member_id: actor.memberId,
        triggered_by_user_id: actor.userId,
        credential_kind: actor.credential,
        api_key_id: actor.apiKeyId,
        created_at: now,
        updated_at: now,
        started_at: null,
        completed_at: null,
      })
      .execute()
    await enqueueSync(ctx, trx, actor.orgId, id)
    await recordAudit(
      ctx.deps,
      trx,
      actor,
      'connector_sync.requested',
      { type: 'connector_sync_event', id },
      { connectorTargetId: targetId },
    )
  })
  ctx.jobs.wake()
  return getSyncEvent(ctx, actor, id)
}

/** Sync events the caller can see (viewer on the instance), newest first. */
export function listSyncEvents(
  ctx: AsyncContext,
  actor: Actor,
  query: { cursor?: string; limit: number; connectorInstanceId?: string; connectorTargetId?: string; status?: string },
): Promise<Page<SyncEventView>> {
  let q = ctx.deps.db
    .selectFrom('connector_sync_event')
    .selectAll()
    .where('org_id', '=', actor.orgId)
    .where(visibleCondition(ctx.deps.db, actor, 'connector_instance', 'connector_sync_event.instance_id'))
  if (query.connectorInstanceId) q = q.where('instance_id', '=', query.connectorInstanceId)
  if (query.connectorTargetId) q = q.where('target_id', '=', query.connectorTargetId)
  if (query.status) q = q.where('status', '=', query.status)
  return keysetPage(q, {
    scope: 'connector-sync-events',
    cursor: query.cursor,
    limit: query.limit,
    order: [{ column: 'id', field: 'id', direction: 'desc' }],
    map: eventView,
  })
}

async function eventFor(
  ctx: AsyncContext,
  actor: Actor,
  id: string,
  min: 'viewer' | 'editor',
): Promise<ConnectorSyncEventTable> {
  const row = await ctx.deps.db
    .selectFrom('connector_sync_event')
    .selectAll()
    .where('id', '=', id)
    .where('org_id', '=', actor.orgId)
    .executeTakeFirst()
  if (!row) throw eventNotFound()
  try {
    await targetFor(ctx, actor, row.target_id, min)
  } catch (error) {
    if ((error as { status?: number }).status === 404) throw eventNotFound()
    throw error
  }
  return row
}

/** One sync event (viewer on its instance). */
export async function getSyncEvent(ctx: AsyncContext, actor: Actor, id: string): Promise<SyncEventView> {
  return eventView(await eventFor(ctx, actor, id, 'viewer'))
}

/**
 * Retries a `failed` or `partial` sync event (editor): it goes back to `queued` and runs again,
 * skipping the items it already imported; 409 `sync_not_retriable` otherwise. The caller becomes
 * the event's trigger, whose rights on mapped plugins the run checks.
 */
export async function retrySync(ctx: AsyncContext, actor: Actor, id: string): Promise<SyncEventView> {
  const event = await eventFor(ctx, actor, id, 'editor')
  await ctx.deps.db.transaction().execute(async (trx) => {
    const row = await trx.selectFrom('connector_sync_event').selectAll().where('id', '=', id).executeTakeFirstOrThrow()
    if (row.status !== 'failed' && row.status !== 'partial') {
      throw controlPlaneError(
        'sync_not_retriable',
        `Only failed or partial syncs can be retried; this one is ${row.status}`,
        { details: { status: row.status } },
      )
    }
    const busy = await trx
      .selectFrom('connector_sync_event')
      .select('id')
      .where('target_id', '=', event.target_id)
      .where('status', 'in', ['queued', 'running'])
      .executeTakeFirst()
    if (busy)
      throw controlPlaneError('sync_in_progress', 'Another sync of this target is queued or running', {
        details: {
          syncEventId: busy.id,
        },
      })
    // The run is on this caller's behalf now: it must not import into plugins on the rights of
    // whoever started the event before.
    await trx
      .updateTable('connector_sync_event')
      .set({
        triggered_by_member_id: actor.memberId,
        triggered_by_user_id: actor.userId,
        credential_kind: actor.credential,
        api_key_id: actor.apiKeyId,
      })
      .where('id', '=', id)
      .execute()
    const job = row.job_id
      ? await trx.selectFrom('job').selectAll().where('id', '=', row.job_id).executeTakeFirst()
      : undefined
    if (job && (job.status === 'failed' || job.status === 'canceled')) await retryJobIn(ctx.deps, trx, ctx.jobs, job)
    else {
      await resetForRetry(ctx, trx, id)
      await enqueueSync(ctx, trx, actor.orgId, id)
    }
    await recordAudit(
      ctx.deps,
      trx,
      actor,
      'connector_sync.retried',
      { type: 'connector_sync_event', id },
      { from: row.status },
    )
  })
  ctx.jobs.wake()
  return getSyncEvent(ctx, actor, id)
}

export async function resetForRetry(ctx: AsyncContext, trx: Transaction<ControlPlaneDb>, id: string): Promise<void> {
  await trx
    .updateTable('connector_sync_event')
    .set({
      status: 'queued',
      event_type: 'retry',
      error_reason: null,
      error_message: null,
      attempt_count: 0,
      next_attempt_at: null,
      completed_at: null,
      updated_at: isoAt(ctx.deps),
    })
    .where('id', '=', id)
    .execute()
}

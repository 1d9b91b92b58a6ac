/**
 * The sync job: imports one snapshot of a connector target's source into config objects.
 *
 * Exactly once across crashes: every item is written in a transaction that also advances the
 * event's counts and checks (fencing) that this attempt still holds the job. Each source item has
 * a binding (target, mapping, path) → config object with the content hash; an item whose binding
 * already names this event was done by an earlier attempt of the same event and is neither
 * written nor counted again, and unchanged content adds no version. So a sync interrupted by a
 * crash resumes where it stopped and finishes with one set of versions and one set of counts.
 *
 * Config objects are created and versioned through the catalog's store with `sourceMode:
 * connector`; history is appended, never overwritten.
 *
 * A mapping into a plugin needs editor on that plugin (checked when it is created or changed);
 * each sync checks again for the member who started it (or retried it): if they cannot edit the
 * plugin now, that mapping imports nothing and deletes nothing, and its items are failures with
 * reason `plugin_access_denied`.
 *
 * Here: the attempt (start, select, write, complete) and the job's failure hooks. What is selected
 * is `sync-items.ts`; the batched writes are `sync-batches.ts`.
 * @module
 */
import type { Transaction } from 'kysely'
import { changeLifecycleIn, findConfigObject } from '../catalog/config-store.ts'
import { isoAt, type Deps } from '../deps.ts'
import { appendChange } from '../events/change-feed.ts'
import type { AsyncContext } from '../jobs/async-context.ts'
import { JobFailure } from '../jobs/job-queue.ts'
import type { JobContext, JobHandler } from '../jobs/job-handler.ts'
import type { ControlPlaneDb } from '../schema.ts'
import { accountToken, type ConnectorType } from './connector-accounts.ts'
import type { ConnectorSyncEventTable, ConnectorTargetTable } from './connector-tables.ts'
import type { TargetConfig } from './connector-targets.ts'
import { DEFAULT_SKILL_LIMITS } from '../../opencode/skill-bundle.ts'
import { openSnapshot } from './sources/open-source.ts'
import { resetForRetry, SYNC_JOB, type SyncState } from './connector-sync.ts'
import { selectSyncItems } from './sync-items.ts'
import { writeSyncBatches } from './sync-batches.ts'

/** Runs one attempt of a sync. */
async function runSync(ctx: AsyncContext, job: JobContext<{ syncEventId: string }>): Promise<unknown> {
  const eventId = job.payload.syncEventId
  const start = await job.commit(async (trx) => {
    const event = await trx.selectFrom('connector_sync_event').selectAll().where('id', '=', eventId).executeTakeFirst()
    if (!event || (event.status !== 'queued' && event.status !== 'running')) return null
    const target = await trx
      .selectFrom('connector_target')
      .selectAll()
      .where('id', '=', event.target_id)
      .executeTakeFirstOrThrow()
    const instance = await trx
      .selectFrom('connector_instance')
      .selectAll()
      .where('id', '=', event.instance_id)
      .executeTakeFirstOrThrow()
    const account = await trx
      .selectFrom('connector_account')
      .selectAll()
      .where('id', '=', instance.connector_account_id)
      .executeTakeFirstOrThrow()
    const now = isoAt(ctx.deps)
    await trx
      .updateTable('connector_sync_event')
      .set({
        status: 'running',
        attempt_count: job.attempt,
        next_attempt_at: null,
        started_at: event.started_at ?? now,
        updated_at: now,
      })
      .where('id', '=', eventId)
      .execute()
    await announceSyncState(ctx.deps, trx, event, 'running', null)
    return { event, target, account }
  })
  if (!start) return { skipped: true }
  const { event, target, account } = start
  const snapshot = await openSnapshot(
    {
      connectorType: target.connector_type as ConnectorType,
      remoteId: target.remote_id,
      branch: (JSON.parse(target.config) as TargetConfig).branch ?? null,
      token: accountToken(ctx, account),
      accountRemoteId: account.remote_id,
    },
    ctx.settings.connectors,
    job.signal,
  )
  try {
    return await importSnapshot(ctx, job, event, target, snapshot)
  } finally {
    await snapshot.close()
  }
}

async function importSnapshot(
  ctx: AsyncContext,
  job: JobContext<{ syncEventId: string }>,
  event: ConnectorSyncEventTable,
  target: ConnectorTargetTable,
  snapshot: Awaited<ReturnType<typeof openSnapshot>>,
): Promise<unknown> {
  const settings = ctx.settings.connectors
  const mappings = await ctx.deps.db
    .selectFrom('connector_mapping')
    .selectAll()
    .where('target_id', '=', target.id)
    .orderBy('id')
    .execute()
  const skillLimits = { ...DEFAULT_SKILL_LIMITS, ...ctx.deps.settings.skills }
  const { items, failures, present, denied } = await selectSyncItems(
    ctx,
    event,
    mappings,
    snapshot.entries,
    skillLimits,
  )
  if (items.length > settings.maxItems)
    throw new JobFailure(
      'too_many_items',
      `The mappings select ${items.length} items; at most ${settings.maxItems} may be synced at once`,
      { retriable: false },
    )
  await job.commit(async (trx) => {
    await trx
      .updateTable('connector_sync_event')
      .set({ source_revision: snapshot.revision, total_count: items.length, updated_at: isoAt(ctx.deps) })
      .where('id', '=', event.id)
      .execute()
  })
  const bindings = new Map(
    (
      await ctx.deps.db.selectFrom('connector_source_binding').selectAll().where('target_id', '=', target.id).execute()
    ).map((b) => [`${b.mapping_id}\0${b.locator}`, b]),
  )
  await writeSyncBatches(ctx, job, event, target, snapshot, items, failures, bindings)
  return job.finish(async (trx) => {
    // Failures found before any import (denied mappings, oversized files) are recorded here too:
    // the batches above, which also record them, never run when no item is left to import.
    await trx
      .updateTable('connector_sync_event')
      .set({
        failed_count: failures.size,
        failures: failures.size ? JSON.stringify([...failures.values()].slice(0, 200)) : null,
      })
      .where('id', '=', event.id)
      .execute()
    // Items gone from the source (for mappings that still exist): their objects are soft-deleted,
    // history kept, in the transaction that completes the event, so this happens exactly once.
    let deleted = 0
    for (const binding of bindings.values()) {
      // A denied mapping deletes nothing either: its objects may be in the plugin.
      if (present.has(`${binding.mapping_id}\0${binding.locator}`) || denied.has(binding.mapping_id)) continue
      const object = await findConfigObject(trx, event.org_id, binding.config_object_id)
      if (object && object.status !== 'deleted') {
        await changeLifecycleIn(ctx.deps, trx, event.org_id, binding.config_object_id, 'delete')
        deleted++
      }
      await trx.deleteFrom('connector_source_binding').where('id', '=', binding.id).execute()
    }
    const before = await trx
      .selectFrom('connector_sync_event')
      .select('deleted_count')
      .where('id', '=', event.id)
      .executeTakeFirstOrThrow()
    await trx
      .updateTable('connector_sync_event')
      .set({ deleted_count: before.deleted_count + deleted })
      .where('id', '=', event.id)
      .execute()
    const row = await trx
      .selectFrom('connector_sync_event')
      .selectAll()
      .where('id', '=', event.id)
      .executeTakeFirstOrThrow()
    const succeeded = row.created_count + row.updated_count + row.unchanged_count + row.deleted_count
    const status: SyncState = row.failed_count === 0 ? 'completed' : succeeded > 0 ? 'partial' : 'failed'
    const now = isoAt(ctx.deps)
    await trx
      .updateTable('connector_sync_event')
      .set({
        status,
        completed_at: now,
        updated_at: now,
        ...(status === 'failed'
          ? {
              error_reason: 'all_items_failed',
              error_message: `None of the ${row.failed_count} selected items could be imported; see failures`,
            }
          : { error_reason: null, error_message: null }),
      })
      .where('id', '=', event.id)
      .execute()
    await announceSyncState(ctx.deps, trx, event, status, status === 'failed' ? 'all_items_failed' : null)
    await trx
      .updateTable('connector_instance')
      .set({ last_synced_at: now, last_sync_status: status, updated_at: now })
      .where('id', '=', event.instance_id)
      .execute()
    return {
      status,
      revision: snapshot.revision,
      created: row.created_count,
      updated: row.updated_count,
      unchanged: row.unchanged_count,
      deleted: row.deleted_count,
      failed: row.failed_count,
    }
  })
}

/** The sync job. */
export function syncJobHandler(ctx: AsyncContext): JobHandler<{ syncEventId: string }> {
  return {
    kind: SYNC_JOB,
    run: (job) => runSync(ctx, job),
    async onFailure(trx, job, failure) {
      const now = isoAt(ctx.deps)
      await trx
        .updateTable('connector_sync_event')
        .set({
          status: failure.final ? 'failed' : 'queued',
          error_reason: failure.reason,
          error_message: failure.message,
          attempt_count: job.attempts,
          next_attempt_at: failure.nextRunAt,
          completed_at: failure.final ? now : null,
          updated_at: now,
        })
        .where('id', '=', job.subject_id!)
        .returning(['id', 'org_id', 'instance_id'])
        .execute()
        .then((rows) =>
          Promise.all(
            rows.map((row) =>
              announceSyncState(ctx.deps, trx, row, failure.final ? 'failed' : 'queued', failure.reason),
            ),
          ),
        )
      if (failure.final) {
        const event = await trx
          .selectFrom('connector_sync_event')
          .select('instance_id')
          .where('id', '=', job.subject_id!)
          .executeTakeFirst()
        if (event)
          await trx
            .updateTable('connector_instance')
            .set({ last_sync_status: 'failed', updated_at: now })
            .where('id', '=', event.instance_id)
            .execute()
      }
    },
    onRetry: (trx, job) => resetForRetry(ctx, trx, job.subject_id!),
  }
}

/**
 * A sync event moving state, in the change feed (`connector_sync.state_changed`), written in the
 * transaction that moved it; it is about the connector instance, so it reaches whoever can see that.
 */
async function announceSyncState(
  deps: Deps,
  trx: Transaction<ControlPlaneDb>,
  event: { id: string; org_id: string; instance_id: string },
  status: string,
  reason: string | null,
): Promise<void> {
  await appendChange(deps, trx, {
    orgId: event.org_id,
    kind: 'connector_sync.state_changed',
    subject: { type: 'connector_instance', id: event.instance_id },
    data: { syncEventId: event.id, status, reason },
  })
}

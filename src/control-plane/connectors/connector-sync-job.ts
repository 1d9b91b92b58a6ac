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
 * @module
 */
import { createHash } from 'node:crypto'
import type { Transaction } from 'kysely'
import { ApiError } from '../../core/errors.ts'
import { newId } from '../../core/ids.ts'
import type { Actor } from '../admin/audit.ts'
import { requireRole } from '../catalog/access-grants.ts'
import { addToPluginIn } from '../catalog/config-objects.ts'
import type { ObjectType } from '../catalog/config-source.ts'
import {
  appendVersionIn,
  changeLifecycleIn,
  findConfigObject,
  insertConfigObject,
  type Writer,
} from '../catalog/config-store.ts'
import { isoAt, type Deps } from '../deps.ts'
import { appendChange } from '../events/change-feed.ts'
import { announceObjectsDelivery } from '../delivery/delivery-events.ts'
import type { AsyncContext } from '../jobs/async-context.ts'
import { JobFailure, shortMessage } from '../jobs/job-queue.ts'
import type { JobContext, JobHandler } from '../jobs/job-handler.ts'
import type { CredentialKind, Role } from '../policy.ts'
import type { ControlPlaneDb } from '../schema.ts'
import { accountToken, type ConnectorType } from './connector-accounts.ts'
import type { ConnectorMappingTable, ConnectorSyncEventTable, ConnectorTargetTable } from './connector-tables.ts'
import type { TargetConfig } from './connector-targets.ts'
import { bundleHash, DEFAULT_SKILL_LIMITS, type SkillLimits, toWireIn } from '../../opencode/skill-bundle.ts'
import { itemTitle, compileSelector, skillFolderEntries } from './source-items.ts'
import { openSnapshot } from './sources/open-source.ts'
import type { SourceEntry } from './sources/source.ts'
import { resetForRetry, SYNC_JOB, type SyncFailure, type SyncState } from './connector-sync.ts'

const contentHash = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex')

/** How many items one transaction writes. */
const BATCH = 50
/** Bytes of skill folders one batch holds in memory at most (a folder may be up to 20 MiB). */
const BATCH_BYTES = 32 * 1024 * 1024

interface Item {
  mappingId: string
  pluginId: string | null
  objectType: ObjectType
  entry: SourceEntry
  /** Skills: the other files of the SKILL.md's folder; null for other items. */
  folder: SourceEntry[] | null
}

/**
 * Why a skill folder cannot be imported, judged from the listed sizes before anything is read,
 * with the same reasons the API gives; null when it fits the limits.
 */
function folderProblem(entry: SourceEntry, folder: SourceEntry[], limits: SkillLimits): SyncFailure | null {
  if (folder.length + 1 > limits.maxFiles)
    return {
      path: entry.path,
      reason: 'skill_too_many_files',
      message: `The skill folder has ${folder.length + 1} files; at most ${limits.maxFiles} are allowed`,
    }
  const big = folder.find((f) => f.size > limits.maxFileBytes)
  if (big)
    return {
      path: entry.path,
      reason: 'skill_file_too_large',
      message: `${big.path} is ${big.size} bytes; at most ${limits.maxFileBytes} are allowed per file`,
    }
  const total = folder.reduce((n, f) => n + f.size, entry.size)
  if (total > limits.maxBytes)
    return {
      path: entry.path,
      reason: 'skill_too_large',
      message: `The skill folder is ${total} bytes; at most ${limits.maxBytes} are allowed`,
    }
  return null
}

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

/**
 * Ids of the mappings into a plugin that the member who triggered the event cannot edit (now):
 * the same `requireRole(…, 'plugin', …, 'editor')` as the API, with the member's current role;
 * a member who left cannot edit anything.
 */
async function deniedMappings(
  ctx: AsyncContext,
  event: ConnectorSyncEventTable,
  mappings: ConnectorMappingTable[],
): Promise<Set<string>> {
  const denied = new Set<string>()
  const pluginIds = [...new Set(mappings.map((m) => m.plugin_id).filter((id): id is string => id !== null))]
  if (pluginIds.length === 0) return denied
  const member = event.triggered_by_member_id
    ? await ctx.deps.db
        .selectFrom('member')
        .select(['id', 'user_id', 'role'])
        .where('id', '=', event.triggered_by_member_id)
        .where('org_id', '=', event.org_id)
        .executeTakeFirst()
    : undefined
  const actor: Actor | null = member
    ? {
        orgId: event.org_id,
        userId: member.user_id,
        memberId: member.id,
        role: member.role as Role,
        credential: event.credential_kind as CredentialKind,
        apiKeyId: event.api_key_id,
      }
    : null
  for (const pluginId of pluginIds) {
    let allowed = false
    if (actor) {
      try {
        await requireRole(ctx.deps.db, actor, 'plugin', pluginId, 'editor')
        allowed = true
      } catch (error) {
        if (!(error instanceof ApiError) || error.status >= 500) throw error
      }
    }
    if (!allowed) for (const mapping of mappings) if (mapping.plugin_id === pluginId) denied.add(mapping.id)
  }
  return denied
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
  const denied = await deniedMappings(ctx, event, mappings)
  const skillLimits = { ...DEFAULT_SKILL_LIMITS, ...ctx.deps.settings.skills }
  const items: Item[] = []
  const failures = new Map<string, SyncFailure>(
    (event.failures ? (JSON.parse(event.failures) as SyncFailure[]) : []).map((f) => [f.path, f]),
  )
  // Every selected path still in the source, including those that fail; the rest were removed.
  const present = new Set<string>()
  for (const mapping of mappings) {
    const pattern = compileSelector(mapping.selector)
    for (const entry of snapshot.entries) {
      if (!pattern.test(entry.path)) continue
      present.add(`${mapping.id}\0${entry.path}`)
      if (denied.has(mapping.id)) {
        failures.set(entry.path, {
          path: entry.path,
          reason: 'plugin_access_denied',
          message: `The member who started this sync cannot edit plugin ${mapping.plugin_id}, which mapping ${mapping.id} imports into`,
        })
        continue
      }
      if (entry.size > settings.maxFileBytes) {
        failures.set(entry.path, {
          path: entry.path,
          reason: 'file_too_large',
          message: `${entry.size} bytes is over the ${settings.maxFileBytes}-byte limit`,
        })
        continue
      }
      // A mapping that selects a SKILL.md brings the skill's whole folder, under the skill limits.
      const folder =
        mapping.object_type === 'skill' && /(^|\/)SKILL\.md$/.test(entry.path)
          ? skillFolderEntries(snapshot.entries, entry.path)
          : null
      const problem = folder && folderProblem(entry, folder, skillLimits)
      if (problem) {
        failures.set(entry.path, problem)
        continue
      }
      items.push({
        mappingId: mapping.id,
        pluginId: mapping.plugin_id,
        objectType: mapping.object_type as ObjectType,
        entry,
        folder,
      })
    }
  }
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
  const writer: Writer = { orgId: event.org_id, memberId: null }
  for (let i = 0; i < items.length; ) {
    if (job.signal.aborted) throw job.signal.reason
    const batch: Item[] = []
    let bytes = 0
    while (i < items.length && batch.length < BATCH) {
      const item = items[i]!
      const size = (item.folder ?? []).reduce((n, f) => n + f.size, item.entry.size)
      if (batch.length > 0 && bytes + size > BATCH_BYTES) break
      batch.push(item)
      bytes += size
      i++
    }
    const contents = await snapshot.read(
      batch.map((item) => item.entry),
      job.signal,
    )
    const folderBytes = await snapshot.readBytes(
      batch.flatMap((item) => item.folder ?? []),
      job.signal,
    )
    await job.commit(async (trx) => {
      const delta = { processed: 0, created: 0, updated: 0, unchanged: 0 }
      const changed: string[] = []
      for (const item of batch) {
        const key = `${item.mappingId}\0${item.entry.path}`
        const binding = bindings.get(key)
        // Done by an earlier attempt of this same event: already written and counted.
        if (binding && binding.last_sync_event_id === event.id) continue
        delta.processed++
        const text = contents.get(item.entry.path) ?? ''
        const dir = item.entry.path.slice(0, item.entry.path.length - 'SKILL.md'.length)
        const files = (item.folder ?? []).map((f) => ({
          path: f.path.slice(dir.length),
          bytes: folderBytes.get(f.path) ?? new Uint8Array(),
          executable: f.executable === true,
        }))
        // A change to any file of a skill's folder is a change of the skill. A skill without other
        // files keeps the plain text hash, so bindings made before folders were synced stay equal.
        const hash = files.length ? bundleHash(text, files) : contentHash(text)
        const input = files.length ? { rawSourceText: text, files: files.map(toWireIn) } : { rawSourceText: text }
        const now = isoAt(ctx.deps)
        try {
          if (binding && binding.content_hash === hash) {
            await trx
              .updateTable('connector_source_binding')
              .set({ last_sync_event_id: event.id, source_revision: snapshot.revision, updated_at: now })
              .where('id', '=', binding.id)
              .execute()
            delta.unchanged++
          } else if (binding) {
            await appendVersionIn(ctx.deps, trx, writer, binding.config_object_id, input, {
              createdVia: 'connector',
              connectorSyncEventId: event.id,
              sourceRevisionRef: snapshot.revision,
            })
            changed.push(binding.config_object_id)
            await trx
              .updateTable('connector_source_binding')
              .set({
                content_hash: hash,
                last_sync_event_id: event.id,
                source_revision: snapshot.revision,
                updated_at: now,
              })
              .where('id', '=', binding.id)
              .execute()
            delta.updated++
          } else {
            const created = await insertConfigObject(
              ctx.deps,
              trx,
              writer,
              {
                type: item.objectType,
                title: itemTitle(item.entry.path, item.objectType),
                description: `${target.remote_id}: ${item.entry.path}`.slice(0, 1000),
                input,
              },
              {
                sourceMode: 'connector',
                connectorInstanceId: event.instance_id,
                connectorSyncEventId: event.id,
                sourceRevisionRef: snapshot.revision,
              },
            )
            await trx
              .insertInto('connector_source_binding')
              .values({
                id: newId('csb'),
                org_id: event.org_id,
                target_id: target.id,
                mapping_id: item.mappingId,
                locator: item.entry.path,
                config_object_id: created.id,
                content_hash: hash,
                source_revision: snapshot.revision,
                last_sync_event_id: event.id,
                created_at: now,
                updated_at: now,
              })
              .execute()
            if (item.pluginId)
              await addToPluginIn(
                ctx.deps,
                trx,
                { orgId: event.org_id, memberId: event.triggered_by_member_id } as Pick<Actor, 'orgId' | 'memberId'>,
                item.pluginId,
                created.id,
                'connector',
                item.mappingId,
              )
            changed.push(created.id)
            delta.created++
          }
          failures.delete(item.entry.path)
        } catch (error) {
          if (!(error instanceof ApiError) || error.status >= 500) throw error
          const details = error.details as { reason?: string } | undefined
          failures.set(item.entry.path, {
            path: item.entry.path,
            reason: details?.reason ?? error.code,
            message: shortMessage(error.message, 300),
          })
        }
      }
      // Synced objects write no audit row each; whoever they reach hears of the batch at once.
      await announceObjectsDelivery(ctx.deps, trx, event.org_id, changed, 'connector_sync.items_written')
      const row = await trx
        .selectFrom('connector_sync_event')
        .select(['processed_count', 'created_count', 'updated_count', 'unchanged_count'])
        .where('id', '=', event.id)
        .executeTakeFirstOrThrow()
      await trx
        .updateTable('connector_sync_event')
        .set({
          processed_count: row.processed_count + delta.processed,
          created_count: row.created_count + delta.created,
          updated_count: row.updated_count + delta.updated,
          unchanged_count: row.unchanged_count + delta.unchanged,
          failed_count: failures.size,
          failures: failures.size ? JSON.stringify([...failures.values()].slice(0, 200)) : null,
          updated_at: isoAt(ctx.deps),
        })
        .where('id', '=', event.id)
        .execute()
    })
  }
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

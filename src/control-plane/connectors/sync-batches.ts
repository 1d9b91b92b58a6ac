/**
 * The writing half of a sync: the selected items in batches (at most {@link BATCH} items and
 * {@link BATCH_BYTES} of skill folders each), every batch in one fenced transaction that writes
 * its objects, versions and bindings and advances the event's counts. An item whose binding
 * already names this event was written by an earlier attempt and is skipped, so a resumed sync
 * neither writes nor counts it twice.
 * @module
 */
import { createHash } from 'node:crypto'
import type { Selectable } from 'kysely'
import { ApiError } from '../../core/errors.ts'
import { newId } from '../../core/ids.ts'
import { bundleHash, toWireIn } from '../../opencode/skill-bundle.ts'
import type { Actor } from '../admin/audit.ts'
import { addToPluginIn } from '../catalog/config-objects.ts'
import { appendVersionIn, insertConfigObject, type Writer } from '../catalog/config-store.ts'
import { isoAt } from '../deps.ts'
import { announceObjectsDelivery } from '../delivery/delivery-events.ts'
import type { AsyncContext } from '../jobs/async-context.ts'
import type { JobContext } from '../jobs/job-handler.ts'
import { shortMessage } from '../jobs/job-queue.ts'
import type { SyncFailure } from './connector-sync.ts'
import type { ConnectorSourceBindingTable, ConnectorSyncEventTable, ConnectorTargetTable } from './connector-tables.ts'
import { itemTitle } from './source-items.ts'
import type { openSnapshot } from './sources/open-source.ts'
import type { SyncItem } from './sync-items.ts'

const contentHash = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex')

/** How many items one transaction writes. */
const BATCH = 50
/** Bytes of skill folders one batch holds in memory at most (a folder may be up to 20 MiB). */
const BATCH_BYTES = 32 * 1024 * 1024

/** A target's bindings, keyed `mappingId\0locator`. */
export type SyncBindings = Map<string, Selectable<ConnectorSourceBindingTable>>

/** Writes every item, batch by batch; `failures` is updated in place. */
export async function writeSyncBatches(
  ctx: AsyncContext,
  job: JobContext<{ syncEventId: string }>,
  event: ConnectorSyncEventTable,
  target: ConnectorTargetTable,
  snapshot: Awaited<ReturnType<typeof openSnapshot>>,
  items: SyncItem[],
  failures: Map<string, SyncFailure>,
  bindings: SyncBindings,
): Promise<void> {
  const writer: Writer = { orgId: event.org_id, memberId: null }
  for (let i = 0; i < items.length; ) {
    if (job.signal.aborted) throw job.signal.reason
    const batch: SyncItem[] = []
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
}

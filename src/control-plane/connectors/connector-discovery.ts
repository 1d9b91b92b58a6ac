/**
 * Discovery: `POST /v1/connector-targets/:id/discovery` queues a walk of the target (202 with the
 * discovery's id); `GET /v1/connector-discoveries/:id` reads the result: the revision walked and
 * the importable items found (skills, commands, agents, tools, plugin manifests), each with a
 * suggested mapping selector. States `queued → running → completed | failed` (with a reason).
 * @module
 */
import { newId } from '../../core/ids.ts'
import { recordAudit, type Actor } from '../admin/audit.ts'
import { isoAt } from '../deps.ts'
import type { AsyncContext } from '../jobs/async-context.ts'
import { enqueueJob } from '../jobs/job-queue.ts'
import type { JobHandler } from '../jobs/job-handler.ts'
import { accountToken, type ConnectorType } from './connector-accounts.ts'
import type { ConnectorDiscoveryTable } from './connector-tables.ts'
import { targetFor, type TargetConfig } from './connector-targets.ts'
import { classifyPath, type DiscoveredItem, skillFolderEntries } from './source-items.ts'
import { openSnapshot } from './sources/open-source.ts'
import { controlPlaneError } from '../control-plane-errors.ts'

/** Discovery states. */
export const DISCOVERY_STATES = ['queued', 'running', 'completed', 'failed'] as const
/** The discovery job kind. */
export const DISCOVERY_JOB = 'connector.discovery'

/** A discovery as the API shows it. */
export interface DiscoveryView {
  id: string
  connectorTargetId: string
  status: string
  sourceRevision: string | null
  summary: Record<string, number>
  items: DiscoveredItem[]
  warnings: string[]
  error: { reason: string; message: string } | null
  jobId: string | null
  createdAt: string
  updatedAt: string
  completedAt: string | null
}

const discoveryNotFound = () => controlPlaneError('connector_discovery_not_found', 'Discovery not found')

function view(row: ConnectorDiscoveryTable): DiscoveryView {
  const items = row.items ? (JSON.parse(row.items) as DiscoveredItem[]) : []
  const summary: Record<string, number> = {}
  for (const item of items) summary[item.kind] = (summary[item.kind] ?? 0) + 1
  return {
    id: row.id,
    connectorTargetId: row.target_id,
    status: row.status,
    sourceRevision: row.source_revision,
    summary,
    items,
    warnings: row.warnings ? (JSON.parse(row.warnings) as string[]) : [],
    error: row.error_reason ? { reason: row.error_reason, message: row.error_message ?? '' } : null,
    jobId: row.job_id,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    completedAt: row.completed_at,
  }
}

/** Queues a discovery of a target (editor). */
export async function requestDiscovery(ctx: AsyncContext, actor: Actor, targetId: string): Promise<DiscoveryView> {
  await targetFor(ctx, actor, targetId, 'editor')
  const id = newId('cdi')
  await ctx.deps.db.transaction().execute(async (trx) => {
    const now = isoAt(ctx.deps)
    await trx
      .insertInto('connector_discovery')
      .values({
        id,
        org_id: actor.orgId,
        target_id: targetId,
        status: 'queued',
        source_revision: null,
        items: null,
        warnings: null,
        error_reason: null,
        error_message: null,
        job_id: null,
        created_at: now,
        updated_at: now,
        completed_at: null,
      })
      .execute()
    const jobId = await enqueueJob(trx, ctx.deps.now(), {
      kind: DISCOVERY_JOB,
      orgId: actor.orgId,
      subjectId: id,
      payload: { discoveryId: id },
      maxAttempts: ctx.settings.connectors.maxAttempts,
      deadlineMs: ctx.settings.connectors.discoveryDeadlineMs,
    })
    await trx.updateTable('connector_discovery').set({ job_id: jobId }).where('id', '=', id).execute()
    await recordAudit(
      ctx.deps,
      trx,
      actor,
      'connector_discovery.requested',
      { type: 'connector_discovery', id },
      { connectorTargetId: targetId },
    )
  })
  ctx.jobs.wake()
  return getDiscovery(ctx, actor, id)
}

/** One discovery (viewer on its instance). */
export async function getDiscovery(ctx: AsyncContext, actor: Actor, id: string): Promise<DiscoveryView> {
  const row = await ctx.deps.db
    .selectFrom('connector_discovery')
    .selectAll()
    .where('id', '=', id)
    .where('org_id', '=', actor.orgId)
    .executeTakeFirst()
  if (!row) throw discoveryNotFound()
  try {
    await targetFor(ctx, actor, row.target_id, 'viewer')
  } catch (error) {
    if ((error as { status?: number }).status === 404) throw discoveryNotFound()
    throw error
  }
  return view(row)
}

/** The discovery job. */
export function discoveryJobHandler(ctx: AsyncContext): JobHandler<{ discoveryId: string }> {
  return {
    kind: DISCOVERY_JOB,
    async run(job) {
      const id = job.payload.discoveryId
      const found = await job.commit(async (trx) => {
        const row = await trx.selectFrom('connector_discovery').selectAll().where('id', '=', id).executeTakeFirst()
        if (!row || row.status === 'completed' || row.status === 'failed') return null
        const target = await trx
          .selectFrom('connector_target')
          .selectAll()
          .where('id', '=', row.target_id)
          .executeTakeFirstOrThrow()
        const instance = await trx
          .selectFrom('connector_instance')
          .select('connector_account_id')
          .where('id', '=', target.instance_id)
          .executeTakeFirstOrThrow()
        const account = await trx
          .selectFrom('connector_account')
          .selectAll()
          .where('id', '=', instance.connector_account_id)
          .executeTakeFirstOrThrow()
        await trx
          .updateTable('connector_discovery')
          .set({ status: 'running', updated_at: isoAt(ctx.deps) })
          .where('id', '=', id)
          .execute()
        return { target, account }
      })
      if (!found) return { skipped: true }
      const snapshot = await openSnapshot(
        {
          connectorType: found.target.connector_type as ConnectorType,
          remoteId: found.target.remote_id,
          branch: (JSON.parse(found.target.config) as TargetConfig).branch ?? null,
          token: accountToken(ctx, found.account),
          accountRemoteId: found.account.remote_id,
        },
        ctx.settings.connectors,
        job.signal,
      )
      try {
        const items: DiscoveredItem[] = []
        const warnings: string[] = []
        for (const entry of snapshot.entries) {
          const item = classifyPath(entry)
          if (!item) continue
          if (items.length >= ctx.settings.connectors.maxItems) {
            warnings.push(`More than ${ctx.settings.connectors.maxItems} importable items; the rest are not listed`)
            break
          }
          if (item.kind === 'skill') item.fileCount = 1 + skillFolderEntries(snapshot.entries, entry.path).length
          items.push(item)
        }
        return job.finish(async (trx) => {
          const now = isoAt(ctx.deps)
          await trx
            .updateTable('connector_discovery')
            .set({
              status: 'completed',
              source_revision: snapshot.revision,
              items: JSON.stringify(items),
              warnings: JSON.stringify(warnings),
              error_reason: null,
              error_message: null,
              completed_at: now,
              updated_at: now,
            })
            .where('id', '=', id)
            .execute()
          return { items: items.length }
        })
      } finally {
        await snapshot.close()
      }
    },
    async onFailure(trx, job, failure) {
      const now = isoAt(ctx.deps)
      await trx
        .updateTable('connector_discovery')
        .set({
          status: failure.final ? 'failed' : 'queued',
          error_reason: failure.reason,
          error_message: failure.message,
          completed_at: failure.final ? now : null,
          updated_at: now,
        })
        .where('id', '=', job.subject_id!)
        .execute()
    },
    async onRetry(trx, job) {
      await trx
        .updateTable('connector_discovery')
        .set({
          status: 'queued',
          error_reason: null,
          error_message: null,
          completed_at: null,
          updated_at: isoAt(ctx.deps),
        })
        .where('id', '=', job.subject_id!)
        .execute()
    },
  }
}

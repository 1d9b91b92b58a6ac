/**
 * Connector targets (one source inside an instance: a repository branch) and mappings (which
 * items of a target become which config objects). Reading needs viewer on the instance, changing
 * needs editor. A target's remote id is checked for its type: a clone URL for `git` (local paths
 * only when `connectors.allowFileUrls`), `owner/repo` for `github`. A `git` target of an account
 * with credentials must be an https:// URL under the account's own remote id (same host and port,
 * within its path), since the account's token is sent to it; instance editors cannot manage
 * accounts, so they must not be able to send its token elsewhere.
 *
 * A mapping into a plugin needs editor on that plugin too (404 `plugin_not_found` when the caller
 * cannot see it, 403 when they can only view it), as adding config objects to it directly does;
 * sync checks it again for the member who started the sync.
 * @module
 */
import { newId } from '../../core/ids.ts'
import { recordAudit, type Actor } from '../admin/audit.ts'
import { requireRole } from '../catalog/access-grants.ts'
import type { GrantRole } from '../catalog/grant-roles.ts'
import { isUniqueViolation } from '../db-errors.ts'
import { isoAt } from '../deps.ts'
import type { AsyncContext } from '../jobs/async-context.ts'
import { keysetPage, type Page } from '../pagination.ts'
import { instanceFor, type ConnectorType } from './connector-accounts.ts'
import type { ConnectorMappingTable, ConnectorTargetTable } from './connector-tables.ts'
import { checkSelector } from './source-items.ts'
import { checkCredentialScope, checkGitUrl } from './sources/git-source.ts'
import { checkGitHubRepo } from './sources/github-source.ts'
import { controlPlaneError } from '../control-plane-errors.ts'

type Json = Record<string, unknown>

/** Target kinds. */
export const TARGET_KINDS = ['repository_branch'] as const
/** Mapping kinds. */
export const MAPPING_KINDS = ['path'] as const

/** A target's configuration. */
export interface TargetConfig {
  /** Branch to read; the remote's default branch when absent. */
  branch?: string
}

/** A target as the API shows it. */
export interface ConnectorTargetView {
  id: string
  connectorInstanceId: string
  connectorType: ConnectorType
  remoteId: string
  targetKind: string
  config: TargetConfig
  createdAt: string
  updatedAt: string
}

/** A mapping as the API shows it. */
export interface ConnectorMappingView {
  id: string
  connectorTargetId: string
  mappingKind: string
  selector: string
  objectType: string
  pluginId: string | null
  config: Json | null
  createdAt: string
  updatedAt: string
}

const targetNotFound = () => controlPlaneError('connector_target_not_found', 'Connector target not found')
const mappingNotFound = () => controlPlaneError('connector_mapping_not_found', 'Connector mapping not found')
const invalid = (path: string, message: string) =>
  controlPlaneError('validation_failed', `Invalid ${path}: ${message}`, { details: { issues: [{ path, message }] } })

/** Maps a target row to its view. */
export function targetView(row: ConnectorTargetTable): ConnectorTargetView {
  return {
    id: row.id,
    connectorInstanceId: row.instance_id,
    connectorType: row.connector_type as ConnectorType,
    remoteId: row.remote_id,
    targetKind: row.target_kind,
    config: JSON.parse(row.config) as TargetConfig,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  }
}

function mappingView(row: ConnectorMappingTable): ConnectorMappingView {
  return {
    id: row.id,
    connectorTargetId: row.target_id,
    mappingKind: row.mapping_kind,
    selector: row.selector,
    objectType: row.object_type,
    pluginId: row.plugin_id,
    config: row.config ? (JSON.parse(row.config) as Json) : null,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  }
}

/**
 * Checks a target's remote id for its type and, for a `git` account with credentials, that the
 * account's token may go there (422 `validation_failed` on `remoteId` otherwise).
 */
async function checkRemote(ctx: AsyncContext, type: ConnectorType, remoteId: string, accountId: string): Promise<void> {
  const problem =
    type === 'git' ? checkGitUrl(remoteId, ctx.settings.connectors.allowFileUrls) : checkGitHubRepo(remoteId)
  if (problem) throw invalid('remoteId', problem)
  if (type !== 'git') return
  const account = await ctx.deps.db
    .selectFrom('connector_account')
    .select(['remote_id', 'credentials_sealed'])
    .where('id', '=', accountId)
    .executeTakeFirstOrThrow()
  if (account.credentials_sealed === null) return
  const scope = checkCredentialScope(account.remote_id, remoteId)
  if (scope) throw invalid('remoteId', scope)
}

/** The target row with its instance checked for `min` (404 when the instance is invisible). */
export async function targetFor(
  ctx: AsyncContext,
  actor: Actor,
  targetId: string,
  min: GrantRole,
): Promise<ConnectorTargetTable> {
  const row = await ctx.deps.db
    .selectFrom('connector_target')
    .selectAll()
    .where('id', '=', targetId)
    .where('org_id', '=', actor.orgId)
    .executeTakeFirst()
  if (!row) throw targetNotFound()
  try {
    await instanceFor(ctx, actor, row.instance_id, min)
  } catch (error) {
    if ((error as { status?: number }).status === 404) throw targetNotFound()
    throw error
  }
  return row
}

/** Targets of an instance in creation order. */
export async function listTargets(
  ctx: AsyncContext,
  actor: Actor,
  instanceId: string,
  query: { cursor?: string; limit: number; targetKind?: string },
): Promise<Page<ConnectorTargetView>> {
  await instanceFor(ctx, actor, instanceId, 'viewer')
  let q = ctx.deps.db.selectFrom('connector_target').selectAll().where('instance_id', '=', instanceId)
  if (query.targetKind) q = q.where('target_kind', '=', query.targetKind)
  return keysetPage(q, {
    scope: `connector-targets:${instanceId}`,
    cursor: query.cursor,
    limit: query.limit,
    order: [{ column: 'id', field: 'id', direction: 'asc' }],
    map: targetView,
  })
}

/** Creates a target (editor on the instance); its type must be the instance's. */
export async function createTarget(
  ctx: AsyncContext,
  actor: Actor,
  instanceId: string,
  input: { connectorType: ConnectorType; remoteId: string; targetKind: string; config: TargetConfig },
): Promise<ConnectorTargetView> {
  const instance = await instanceFor(ctx, actor, instanceId, 'editor')
  if (instance.connector_type !== input.connectorType)
    throw invalid('connectorType', `must be ${instance.connector_type}, the instance's type`)
  await checkRemote(ctx, input.connectorType, input.remoteId, instance.connector_account_id)
  const id = newId('ctg')
  const now = isoAt(ctx.deps)
  try {
    await ctx.deps.db.transaction().execute(async (trx) => {
      await trx
        .insertInto('connector_target')
        .values({
          id,
          org_id: actor.orgId,
          instance_id: instanceId,
          connector_type: input.connectorType,
          remote_id: input.remoteId,
          target_kind: input.targetKind,
          config: JSON.stringify(input.config),
          created_at: now,
          updated_at: now,
        })
        .execute()
      await recordAudit(
        ctx.deps,
        trx,
        actor,
        'connector_target.created',
        { type: 'connector_target', id },
        { connectorInstanceId: instanceId },
      )
    })
  } catch (error) {
    if (isUniqueViolation(error))
      throw controlPlaneError('connector_target_exists', 'The instance already has a target with that remote id')
    throw error
  }
  return targetView(await targetFor(ctx, actor, id, 'viewer'))
}

/** Changes a target's remote id or configuration (editor). */
export async function updateTarget(
  ctx: AsyncContext,
  actor: Actor,
  targetId: string,
  input: { remoteId?: string; config?: TargetConfig },
): Promise<ConnectorTargetView> {
  const row = await targetFor(ctx, actor, targetId, 'editor')
  if (input.remoteId !== undefined) {
    const instance = await ctx.deps.db
      .selectFrom('connector_instance')
      .select('connector_account_id')
      .where('id', '=', row.instance_id)
      .executeTakeFirstOrThrow()
    await checkRemote(ctx, row.connector_type as ConnectorType, input.remoteId, instance.connector_account_id)
  }
  try {
    await ctx.deps.db.transaction().execute(async (trx) => {
      await trx
        .updateTable('connector_target')
        .set({
          ...(input.remoteId !== undefined ? { remote_id: input.remoteId } : {}),
          ...(input.config !== undefined ? { config: JSON.stringify(input.config) } : {}),
          updated_at: isoAt(ctx.deps),
        })
        .where('id', '=', targetId)
        .execute()
      await recordAudit(
        ctx.deps,
        trx,
        actor,
        'connector_target.updated',
        { type: 'connector_target', id: targetId },
        { fields: Object.keys(input).sort().join(',') },
      )
    })
  } catch (error) {
    if (isUniqueViolation(error))
      throw controlPlaneError('connector_target_exists', 'The instance already has a target with that remote id')
    throw error
  }
  return targetView(await targetFor(ctx, actor, targetId, 'viewer'))
}

/** Deletes a target (editor) with its mappings, discoveries and sync events. Synced config objects stay. */
export async function deleteTarget(ctx: AsyncContext, actor: Actor, targetId: string): Promise<void> {
  await targetFor(ctx, actor, targetId, 'editor')
  await ctx.deps.db.transaction().execute(async (trx) => {
    await trx.deleteFrom('connector_target').where('id', '=', targetId).execute()
    await recordAudit(ctx.deps, trx, actor, 'connector_target.deleted', { type: 'connector_target', id: targetId })
  })
}

/** Mappings of a target in creation order. */
export async function listMappings(
  ctx: AsyncContext,
  actor: Actor,
  targetId: string,
  query: { cursor?: string; limit: number; objectType?: string },
): Promise<Page<ConnectorMappingView>> {
  await targetFor(ctx, actor, targetId, 'viewer')
  let q = ctx.deps.db.selectFrom('connector_mapping').selectAll().where('target_id', '=', targetId)
  if (query.objectType) q = q.where('object_type', '=', query.objectType)
  return keysetPage(q, {
    scope: `connector-mappings:${targetId}`,
    cursor: query.cursor,
    limit: query.limit,
    order: [{ column: 'id', field: 'id', direction: 'asc' }],
    map: mappingView,
  })
}

/**
 * Creates a mapping (editor on the instance, and on the plugin when one is given: 404
 * `plugin_not_found` when the caller cannot see it, 403 when they only view it); 409
 * `connector_mapping_exists` for the same selector and type.
 */
export async function createMapping(
  ctx: AsyncContext,
  actor: Actor,
  targetId: string,
  input: { mappingKind: string; selector: string; objectType: string; pluginId?: string; config?: Json },
): Promise<ConnectorMappingView> {
  await targetFor(ctx, actor, targetId, 'editor')
  const problem = checkSelector(input.selector)
  if (problem) throw invalid('selector', problem)
  const id = newId('cmp')
  const now = isoAt(ctx.deps)
  try {
    await ctx.deps.db.transaction().execute(async (trx) => {
      // As for adding config objects to a plugin directly (createConfigObject, addPluginObject).
      if (input.pluginId) await requireRole(trx, actor, 'plugin', input.pluginId, 'editor')
      await trx
        .insertInto('connector_mapping')
        .values({
          id,
          org_id: actor.orgId,
          target_id: targetId,
          mapping_kind: input.mappingKind,
          selector: input.selector,
          object_type: input.objectType,
          plugin_id: input.pluginId ?? null,
          config: input.config ? JSON.stringify(input.config) : null,
          created_at: now,
          updated_at: now,
        })
        .execute()
      await recordAudit(
        ctx.deps,
        trx,
        actor,
        'connector_mapping.created',
        { type: 'connector_mapping', id },
        { connectorTargetId: targetId, objectType: input.objectType },
      )
    })
  } catch (error) {
    if (isUniqueViolation(error))
      throw controlPlaneError('connector_mapping_exists', 'The target already maps that selector to that type')
    throw error
  }
  const row = await ctx.deps.db
    .selectFrom('connector_mapping')
    .selectAll()
    .where('id', '=', id)
    .executeTakeFirstOrThrow()
  return mappingView(row)
}

async function mappingFor(
  ctx: AsyncContext,
  actor: Actor,
  mappingId: string,
  min: GrantRole,
): Promise<ConnectorMappingTable> {
  const row = await ctx.deps.db
    .selectFrom('connector_mapping')
    .selectAll()
    .where('id', '=', mappingId)
    .where('org_id', '=', actor.orgId)
    .executeTakeFirst()
  if (!row) throw mappingNotFound()
  try {
    await targetFor(ctx, actor, row.target_id, min)
  } catch (error) {
    if ((error as { status?: number }).status === 404) throw mappingNotFound()
    throw error
  }
  return row
}

/** One mapping (viewer). */
export async function getMapping(ctx: AsyncContext, actor: Actor, mappingId: string): Promise<ConnectorMappingView> {
  return mappingView(await mappingFor(ctx, actor, mappingId, 'viewer'))
}

/**
 * Changes a mapping's selector, plugin or configuration (editor). When the mapping leads into a
 * plugin after the change (the new `pluginId`, or the one it keeps), the caller needs editor on
 * that plugin too, since the change decides what is synced into it; `pluginId: null` needs none.
 */
export async function updateMapping(
  ctx: AsyncContext,
  actor: Actor,
  mappingId: string,
  input: { selector?: string; pluginId?: string | null; config?: Json | null },
): Promise<ConnectorMappingView> {
  await mappingFor(ctx, actor, mappingId, 'editor')
  if (input.selector !== undefined) {
    const problem = checkSelector(input.selector)
    if (problem) throw invalid('selector', problem)
  }
  try {
    await ctx.deps.db.transaction().execute(async (trx) => {
      const current = await trx
        .selectFrom('connector_mapping')
        .select('plugin_id')
        .where('id', '=', mappingId)
        .executeTakeFirstOrThrow()
      const pluginId = input.pluginId !== undefined ? input.pluginId : current.plugin_id
      if (pluginId) await requireRole(trx, actor, 'plugin', pluginId, 'editor')
      await trx
        .updateTable('connector_mapping')
        .set({
          ...(input.selector !== undefined ? { selector: input.selector } : {}),
          ...(input.pluginId !== undefined ? { plugin_id: input.pluginId } : {}),
          ...(input.config !== undefined ? { config: input.config ? JSON.stringify(input.config) : null } : {}),
          updated_at: isoAt(ctx.deps),
        })
        .where('id', '=', mappingId)
        .execute()
      await recordAudit(
        ctx.deps,
        trx,
        actor,
        'connector_mapping.updated',
        { type: 'connector_mapping', id: mappingId },
        { fields: Object.keys(input).sort().join(',') },
      )
    })
  } catch (error) {
    if (isUniqueViolation(error))
      throw controlPlaneError('connector_mapping_exists', 'The target already maps that selector to that type')
    throw error
  }
  return getMapping(ctx, actor, mappingId)
}

/** Deletes a mapping (editor). Config objects it created stay, with their history. */
export async function deleteMapping(ctx: AsyncContext, actor: Actor, mappingId: string): Promise<void> {
  await mappingFor(ctx, actor, mappingId, 'editor')
  await ctx.deps.db.transaction().execute(async (trx) => {
    await trx.deleteFrom('connector_mapping').where('id', '=', mappingId).execute()
    await recordAudit(ctx.deps, trx, actor, 'connector_mapping.deleted', { type: 'connector_mapping', id: mappingId })
  })
}

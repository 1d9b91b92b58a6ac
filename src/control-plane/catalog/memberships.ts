/**
 * What plugins and marketplaces contain: config objects in plugins, plugins in marketplaces,
 * and their resolved views. Adding needs the editor role on the container and sight of the
 * member (an id the caller cannot see is a 404, as everywhere).
 * @module
 */
import { newId } from '../../core/ids.ts'
import { recordAudit, type Actor } from '../admin/audit.ts'
import { isoAt, type Deps } from '../deps.ts'
import { keysetPage, type Page } from '../pagination.ts'
import { requireRole } from './access-grants.ts'
import { visibleCondition } from './visibility-sql.ts'
import { addToPluginIn, objectQuery, objectView, type ConfigObjectView } from './config-objects.ts'
import { resolveObjectIn, type ResolvedView } from './config-versions.ts'
import { getContainer, type ContainerView } from './containers.ts'
import { controlPlaneError } from '../control-plane-errors.ts'

/** A config object in a plugin. */
export interface PluginMemberView {
  id: string
  pluginId: string
  configObjectId: string
  membershipSource: string
  createdByMemberId: string | null
  createdAt: string
  configObject: ConfigObjectView
}

/** A plugin in a marketplace. */
export interface MarketplaceEntryView {
  id: string
  marketplaceId: string
  pluginId: string
  membershipSource: string
  createdByMemberId: string | null
  createdAt: string
  plugin: ContainerView
}

/** A plugin in a marketplace's resolved view: the plugin and how many objects of each type it has. */
export interface ResolvedPluginEntry {
  plugin: ContainerView
  componentCounts: Record<string, number>
}

/** The plugin's config objects in the order they were added. */
export async function listPluginObjects(
  deps: Deps,
  actor: Actor,
  pluginId: string,
  page: { cursor?: string; limit: number },
): Promise<Page<PluginMemberView>> {
  await requireRole(deps.db, actor, 'plugin', pluginId, 'viewer')
  const query = objectQuery(deps.db, actor.orgId)
    .innerJoin('plugin_config_object as pco', 'pco.config_object_id', 'co.id')
    .select([
      'pco.id as m_id',
      'pco.membership_source as m_source',
      'pco.created_by_member_id as m_by',
      'pco.created_at as m_at',
    ])
    .where('pco.plugin_id', '=', pluginId)
  return keysetPage(query, {
    scope: `plugin-objects:${pluginId}`,
    cursor: page.cursor,
    limit: page.limit,
    order: [{ column: 'pco.id', field: 'm_id', direction: 'asc' }],
    map: (row) => ({
      id: row.m_id,
      pluginId,
      configObjectId: row.id,
      membershipSource: row.m_source,
      createdByMemberId: row.m_by,
      createdAt: row.m_at,
      configObject: objectView(row),
    }),
  })
}

/** Adds a visible config object to a plugin (editor on the plugin); 409 `already_in_plugin`. */
export async function addPluginObject(
  deps: Deps,
  actor: Actor,
  pluginId: string,
  configObjectId: string,
): Promise<PluginMemberView> {
  const id = await deps.db.transaction().execute(async (trx) => {
    await requireRole(trx, actor, 'plugin', pluginId, 'editor')
    await requireRole(trx, actor, 'config_object', configObjectId, 'viewer')
    const id = await addToPluginIn(deps, trx, actor, pluginId, configObjectId, 'manual')
    await recordAudit(deps, trx, actor, 'plugin.member_added', { type: 'plugin', id: pluginId }, { configObjectId })
    return id
  })
  const row = await objectQuery(deps.db, actor.orgId).where('co.id', '=', configObjectId).executeTakeFirstOrThrow()
  const member = await deps.db
    .selectFrom('plugin_config_object')
    .selectAll()
    .where('id', '=', id)
    .executeTakeFirstOrThrow()
  return {
    id,
    pluginId,
    configObjectId,
    membershipSource: member.membership_source,
    createdByMemberId: member.created_by_member_id,
    createdAt: member.created_at,
    configObject: objectView(row),
  }
}

/** Removes a config object from a plugin (editor); 404 `plugin_membership_not_found`. */
export async function removePluginObject(
  deps: Deps,
  actor: Actor,
  pluginId: string,
  configObjectId: string,
): Promise<void> {
  await deps.db.transaction().execute(async (trx) => {
    await requireRole(trx, actor, 'plugin', pluginId, 'editor')
    const deleted = await trx
      .deleteFrom('plugin_config_object')
      .where('plugin_id', '=', pluginId)
      .where('config_object_id', '=', configObjectId)
      .executeTakeFirst()
    if (Number(deleted.numDeletedRows) === 0)
      throw controlPlaneError('plugin_membership_not_found', 'The config object is not in the plugin')
    await recordAudit(deps, trx, actor, 'plugin.member_removed', { type: 'plugin', id: pluginId }, { configObjectId })
  })
}

/** The resolved form of every active config object in the plugin, in the order they were added. */
export async function resolvePlugin(
  deps: Deps,
  actor: Actor,
  pluginId: string,
  page: { cursor?: string; limit: number },
): Promise<Page<ResolvedView>> {
  await requireRole(deps.db, actor, 'plugin', pluginId, 'viewer')
  const query = deps.db
    .selectFrom('plugin_config_object as pco')
    .innerJoin('config_object as co', 'co.id', 'pco.config_object_id')
    .select(['pco.id', 'co.id as object_id'])
    .where('pco.plugin_id', '=', pluginId)
    .where('co.status', '=', 'active')
  const ids = await keysetPage(query, {
    scope: `plugin-resolved:${pluginId}`,
    cursor: page.cursor,
    limit: page.limit,
    order: [{ column: 'pco.id', field: 'id', direction: 'asc' }],
    map: (row) => row.object_id,
  })
  const items: ResolvedView[] = []
  for (const id of ids.items) items.push(await resolveObjectIn(deps, actor.orgId, id))
  return { items, nextCursor: ids.nextCursor }
}

/** The marketplace's plugins in the order they were added. */
export async function listMarketplacePlugins(
  deps: Deps,
  actor: Actor,
  marketplaceId: string,
  page: { cursor?: string; limit: number },
): Promise<Page<MarketplaceEntryView>> {
  await requireRole(deps.db, actor, 'marketplace', marketplaceId, 'viewer')
  const query = deps.db.selectFrom('marketplace_plugin').selectAll().where('marketplace_id', '=', marketplaceId)
  const rows = await keysetPage(query, {
    scope: `marketplace-plugins:${marketplaceId}`,
    cursor: page.cursor,
    limit: page.limit,
    order: [{ column: 'id', field: 'id', direction: 'asc' }],
    map: (row) => row,
  })
  const items: MarketplaceEntryView[] = []
  for (const row of rows.items) {
    // Listed plugins are visible to whoever sees the marketplace (catalog inheritance), so read as the org.
    items.push({
      id: row.id,
      marketplaceId,
      pluginId: row.plugin_id,
      membershipSource: row.membership_source,
      createdByMemberId: row.created_by_member_id,
      createdAt: row.created_at,
      plugin: await getContainer(deps, { ...actor, role: 'admin' }, 'plugin', row.plugin_id),
    })
  }
  return { items, nextCursor: rows.nextCursor }
}

/** Lists a visible plugin in a marketplace (editor on the marketplace); 409 `already_in_marketplace`. */
export async function addMarketplacePlugin(
  deps: Deps,
  actor: Actor,
  marketplaceId: string,
  pluginId: string,
): Promise<MarketplaceEntryView> {
  const id = newId('mkp')
  await deps.db.transaction().execute(async (trx) => {
    await requireRole(trx, actor, 'marketplace', marketplaceId, 'editor')
    await requireRole(trx, actor, 'plugin', pluginId, 'viewer')
    const existing = await trx
      .selectFrom('marketplace_plugin')
      .select('id')
      .where('marketplace_id', '=', marketplaceId)
      .where('plugin_id', '=', pluginId)
      .executeTakeFirst()
    if (existing) throw controlPlaneError('already_in_marketplace', 'The plugin is already in the marketplace')
    await trx
      .insertInto('marketplace_plugin')
      .values({
        id,
        org_id: actor.orgId,
        marketplace_id: marketplaceId,
        plugin_id: pluginId,
        membership_source: 'manual',
        created_by_member_id: actor.memberId,
        created_at: isoAt(deps),
      })
      .execute()
    await recordAudit(
      deps,
      trx,
      actor,
      'marketplace.plugin_added',
      { type: 'marketplace', id: marketplaceId },
      { pluginId },
    )
  })
  const row = await deps.db.selectFrom('marketplace_plugin').selectAll().where('id', '=', id).executeTakeFirstOrThrow()
  return {
    id,
    marketplaceId,
    pluginId,
    membershipSource: row.membership_source,
    createdByMemberId: row.created_by_member_id,
    createdAt: row.created_at,
    plugin: await getContainer(deps, actor, 'plugin', pluginId),
  }
}

/** Removes a plugin from a marketplace (editor); 404 `marketplace_membership_not_found`. */
export async function removeMarketplacePlugin(
  deps: Deps,
  actor: Actor,
  marketplaceId: string,
  pluginId: string,
): Promise<void> {
  await deps.db.transaction().execute(async (trx) => {
    await requireRole(trx, actor, 'marketplace', marketplaceId, 'editor')
    const deleted = await trx
      .deleteFrom('marketplace_plugin')
      .where('marketplace_id', '=', marketplaceId)
      .where('plugin_id', '=', pluginId)
      .executeTakeFirst()
    if (Number(deleted.numDeletedRows) === 0)
      throw controlPlaneError('marketplace_membership_not_found', 'The plugin is not in the marketplace')
    await recordAudit(
      deps,
      trx,
      actor,
      'marketplace.plugin_removed',
      { type: 'marketplace', id: marketplaceId },
      { pluginId },
    )
  })
}

/** The marketplace's plugins with the number of active config objects of each type in each. */
export async function resolveMarketplace(
  deps: Deps,
  actor: Actor,
  marketplaceId: string,
  page: { cursor?: string; limit: number },
): Promise<Page<ResolvedPluginEntry>> {
  const entries = await listMarketplacePlugins(deps, actor, marketplaceId, page)
  const items: ResolvedPluginEntry[] = []
  for (const entry of entries.items) {
    const counts = await deps.db
      .selectFrom('plugin_config_object as pco')
      .innerJoin('config_object as co', 'co.id', 'pco.config_object_id')
      .select(['co.object_type', (e) => e.fn.countAll<number>().as('n')])
      .where('pco.plugin_id', '=', entry.pluginId)
      .where('co.status', '=', 'active')
      .groupBy('co.object_type')
      .execute()
    items.push({
      plugin: entry.plugin,
      componentCounts: Object.fromEntries(counts.map((c) => [c.object_type, Number(c.n)])),
    })
  }
  return { items, nextCursor: entries.nextCursor }
}

/** A plugin that contains a config object, seen from the object. */
export interface ObjectPluginView {
  id: string
  pluginId: string
  configObjectId: string
  membershipSource: string
  createdByMemberId: string | null
  createdAt: string
  plugin: ContainerView
}

/** The plugins (that the caller can see) containing a visible config object, in the order it was added to them. */
export async function listObjectPlugins(
  deps: Deps,
  actor: Actor,
  objectId: string,
  page: { cursor?: string; limit: number },
): Promise<Page<ObjectPluginView>> {
  await requireRole(deps.db, actor, 'config_object', objectId, 'viewer')
  const query = deps.db
    .selectFrom('plugin_config_object as pco')
    .selectAll('pco')
    .where('pco.config_object_id', '=', objectId)
    .where(visibleCondition(deps.db, actor, 'plugin', 'pco.plugin_id'))
  const rows = await keysetPage(query, {
    scope: `object-plugins:${objectId}`,
    cursor: page.cursor,
    limit: page.limit,
    order: [{ column: 'pco.id', field: 'id', direction: 'asc' }],
    map: (row) => row,
  })
  const items: ObjectPluginView[] = []
  for (const row of rows.items) {
    items.push({
      id: row.id,
      pluginId: row.plugin_id,
      configObjectId: objectId,
      membershipSource: row.membership_source,
      createdByMemberId: row.created_by_member_id,
      createdAt: row.created_at,
      plugin: await getContainer(deps, { ...actor, role: 'admin' }, 'plugin', row.plugin_id),
    })
  }
  return { items, nextCursor: rows.nextCursor }
}

/** Adds a visible config object to a plugin, seen from the object (editor on the plugin). */
export async function addObjectToPlugin(
  deps: Deps,
  actor: Actor,
  objectId: string,
  pluginId: string,
): Promise<ObjectPluginView> {
  const member = await addPluginObject(deps, actor, pluginId, objectId)
  return {
    id: member.id,
    pluginId,
    configObjectId: objectId,
    membershipSource: member.membershipSource,
    createdByMemberId: member.createdByMemberId,
    createdAt: member.createdAt,
    plugin: await getContainer(deps, actor, 'plugin', pluginId),
  }
}

/** Removes a config object from a plugin, seen from the object (editor on the plugin; the object must be visible). */
export async function removeObjectFromPlugin(
  deps: Deps,
  actor: Actor,
  objectId: string,
  pluginId: string,
): Promise<void> {
  await requireRole(deps.db, actor, 'config_object', objectId, 'viewer')
  await removePluginObject(deps, actor, pluginId, objectId)
}

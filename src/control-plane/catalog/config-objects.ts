/**
 * Config objects as the API serves them: create, list with every spec filter (computed in SQL
 * over indexes), read, lifecycle, and the per-object grant checks. Objects are visible to
 * owners and admins, to holders of a grant, and to people who can see a plugin or skill hub
 * containing them; anything else is a 404. The creator receives a manager grant.
 * @module
 */
import type { MaybePromise } from '../../core/maybe-promise.ts'
import { type Expression, type SqlBool, sql } from 'kysely'
import { newId } from '../../core/ids.ts'
import { commitsAreRecorded } from '../../storage/transaction-scope.ts'
import { insertRows, insertsAreOneStatement, type RowInsert } from '../../storage/row-inserts.ts'
import { recordAudit, type Actor } from '../admin/audit.ts'
import { isoAt, type Deps } from '../deps.ts'
import type { Page } from '../pagination.ts'
import { preparedPage } from '../prepared-page.ts'
import { requireRole, creatorGrantRow } from './access-grants.ts'
import { isOrgAdmin } from './grant-roles.ts'
import { visibleRowSql, visibleSql, visibleIdsSql } from './visibility-sql.ts'
import type { Db } from '../schema.ts'
import type { ObjectType, VersionInput } from './config-source.ts'
import {
  changeLifecycleIn,
  planConfigObject,
  type PlannedConfigObject,
  type LIFECYCLE,
  type CreatedVia,
  type ObjectState,
  type SourceMode,
} from './config-store.ts'
import { prefixUpperBound, queryTerms } from './search-terms.ts'
import { preparedVisiblePage } from './visible-page.ts'
import { controlPlaneError } from '../control-plane-errors.ts'

/** A short summary of the latest version (no payload). */
export interface VersionSummary {
  id: string
  number: number
  createdVia: CreatedVia
  createdByMemberId: string | null
  sourceRevisionRef: string | null
  createdAt: string
}

/** A config object as the API shows it. */
export interface ConfigObjectView {
  id: string
  type: ObjectType
  sourceMode: SourceMode
  title: string
  description: string | null
  name: string
  status: ObjectState
  connectorInstanceId: string | null
  createdByMemberId: string | null
  versionCount: number
  latestVersion: VersionSummary | null
  createdAt: string
  updatedAt: string
  archivedAt: string | null
  deletedAt: string | null
}

/** Which deleted objects a list includes. */
export type DeletedSelection = 'exclude' | 'include' | 'only'

/** List filters (all optional) plus the page. */
export interface ConfigObjectFilters {
  cursor?: string
  limit: number
  type?: ObjectType
  status?: ObjectState
  sourceMode?: SourceMode
  pluginId?: string
  connectorInstanceId?: string
  deleted?: DeletedSelection
  q?: string
}

/** The object query, with the latest version's summary (kept on the row). */
export function objectQuery(db: Db, orgId: string) {
  return db
    .selectFrom('config_object as co')
    .select([
      'co.id',
      'co.object_type',
      'co.source_mode',
      'co.title',
      'co.description',
      'co.name',
      'co.status',
      'co.connector_instance_id',
      'co.created_by_member_id',
      'co.version_count',
      'co.created_at',
      'co.updated_at',
      'co.archived_at',
      'co.deleted_at',
      'co.latest_version_id',
      'co.latest_created_via',
      'co.latest_created_by_member_id',
      'co.latest_source_revision_ref',
      'co.latest_created_at',
    ])
    .where('co.org_id', '=', orgId)
}

type ObjectRow = Awaited<ReturnType<ReturnType<typeof objectQuery>['executeTakeFirstOrThrow']>>

/** Maps a row of {@link objectQuery}. */
export function objectView(row: ObjectRow): ConfigObjectView {
  return {
    id: row.id,
    type: row.object_type as ObjectType,
    sourceMode: row.source_mode as SourceMode,
    title: row.title,
    description: row.description,
    name: row.name,
    status: row.status as ObjectState,
    connectorInstanceId: row.connector_instance_id,
    createdByMemberId: row.created_by_member_id,
    versionCount: row.version_count,
    latestVersion: row.latest_version_id
      ? {
          id: row.latest_version_id,
          number: row.version_count,
          createdVia: row.latest_created_via as CreatedVia,
          createdByMemberId: row.latest_created_by_member_id,
          sourceRevisionRef: row.latest_source_revision_ref,
          createdAt: row.latest_created_at!,
        }
      : null,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    archivedAt: row.archived_at,
    deletedAt: row.deleted_at,
  }
}

/**
 * The filtered list query (org-scoped, no visibility condition, no order). `values` holds, in this
 * order: the organization, type, status, source mode, connector instance, plugin, then each search
 * word and its prefix's upper bound; `shape` the deleted selection, the number of words and
 * whether `q` had none. Values are taken as given, so {@link preparedPage} can pass placeholders.
 */
function filteredObjects(db: Db, shape: string, values: ReadonlyArray<unknown>) {
  const [orgId, type, status, sourceMode, connectorInstanceId, pluginId] = values as Array<string | undefined>
  const [deleted, words, noWords] = shape.split(':')
  let query = objectQuery(db, orgId!)
  if (type !== undefined) query = query.where('co.object_type', '=', type)
  if (status !== undefined) query = query.where('co.status', '=', status)
  if (sourceMode !== undefined) query = query.where('co.source_mode', '=', sourceMode)
  if (connectorInstanceId !== undefined) query = query.where('co.connector_instance_id', '=', connectorInstanceId)
  if (deleted === 'exclude') query = query.where('co.status', '!=', 'deleted')
  if (deleted === 'only') query = query.where('co.status', '=', 'deleted')
  if (pluginId !== undefined) {
    query = query.where(
      'co.id',
      'in',
      db
        .selectFrom('plugin_config_object as pco')
        .select('pco.config_object_id')
        .where('pco.plugin_id', '=', pluginId)
        .where('pco.org_id', '=', orgId!),
    )
  }
  for (let i = 0; i < Number(words); i++) {
    query = query.where(
      'co.id',
      'in',
      db
        .selectFrom('config_object_term as t')
        .select('t.config_object_id')
        .where('t.org_id', '=', orgId!)
        .where('t.term', '>=', values[6 + 2 * i] as string)
        .where('t.term', '<', values[7 + 2 * i] as string),
    )
  }
  // A query of only punctuation has no words: it matches nothing rather than everything.
  if (noWords === 'none') query = query.where(sql<boolean>`1 = 0`)
  return query
}

const OBJECT_ORDER = [{ column: 'co.id', field: 'id', direction: 'asc' as const }]

/** An owner's or admin's page: they see every object, so the list is compiled once per shape. */
const adminObjectPage = preparedPage({
  scope: 'config-objects',
  order: OBJECT_ORDER,
  map: objectView,
  // The visibility condition of an admin is constant (`true`), kept so cursors match the general form.
  build: (db: Db, shape, values) => filteredObjects(db, shape, values).where((eb) => eb.lit(true)),
})

/**
 * Visible objects in id (creation) order, filtered in SQL. Each single-column filter is served by
 * an `(org_id, <column>, id)` index; `q` and `pluginId` by their own indexes; the deleted
 * selection by the status column.
 */
export function listConfigObjects(
  deps: Deps,
  actor: Actor,
  filters: ConfigObjectFilters,
): MaybePromise<Page<ConfigObjectView>> {
  // An explicit status decides on its own (status=deleted lists deleted objects); otherwise deleted ones are hidden.
  const deleted = filters.deleted ?? (filters.status ? 'include' : 'exclude')
  const terms = filters.q ? queryTerms(filters.q) : []
  const values: unknown[] = [
    actor.orgId,
    filters.type || undefined,
    filters.status || undefined,
    filters.sourceMode || undefined,
    filters.connectorInstanceId || undefined,
    filters.pluginId || undefined,
    ...terms.flatMap((term) => [term, prefixUpperBound(term)]),
  ]
  const shape = `${deleted}:${terms.length}:${filters.q !== undefined && terms.length === 0 ? 'none' : 'some'}`
  if (isOrgAdmin(actor))
    return adminObjectPage(deps.db, shape, values, { cursor: filters.cursor, limit: filters.limit })
  return memberObjectPage(deps.db, shape, [...values, actor.memberId], { cursor: filters.cursor, limit: filters.limit })
}

/** A plain member's page: the filtered list and what they see (the member's id is the last value). */
const memberObjectPage = preparedVisiblePage({
  scope: 'config-objects',
  column: 'co.id',
  field: 'id',
  map: objectView,
  build: (db, shape, values) => {
    const actor = { orgId: values[0] as string, memberId: values[values.length - 1] as string }
    return {
      base: filteredObjects(db, shape, values.slice(0, -1)),
      setCondition: () => visibleSql(actor, 'config_object', sql.ref('co.id')) as unknown as Expression<SqlBool>,
      reachIds: (after) => visibleIdsSql(actor, after),
      rowCondition: visibleRowSql(actor, sql.ref('co.id')),
    }
  },
})

/** One visible object. */
export async function getConfigObject(deps: Deps, actor: Actor, id: string): Promise<ConfigObjectView> {
  await requireRole(deps.db, actor, 'config_object', id, 'viewer')
  const row = await objectQuery(deps.db, actor.orgId).where('co.id', '=', id).executeTakeFirstOrThrow()
  return objectView(row)
}

/** Body of `POST /v1/config-objects`. */
export interface CreateConfigObjectBody {
  type: ObjectType
  sourceMode: Exclude<SourceMode, 'connector'>
  title: string
  description?: string | null
  input: VersionInput
  pluginIds?: string[]
}

/**
 * Creates an object and its first version; the creator gets a manager grant. Plugins need editor.
 * The source is parsed before anything is written, and the object's rows, the grant, the audit
 * row and the change are one statement on PostgreSQL (`storage/row-inserts.ts`), which needs no
 * transaction around it unless plugins are checked and joined as well. The answer is
 * the row as written: the creator was just made its manager, and nothing else can have changed
 * an object no one else knew of, so there is nothing to read back.
 */
export async function createConfigObject(
  deps: Deps,
  actor: Actor,
  body: CreateConfigObjectBody,
): Promise<ConfigObjectView> {
  return objectView((await writeConfigObject(deps, actor, body)).object)
}

/**
 * {@link createConfigObject}, answering with the rows as written, for callers that shape another
 * view of them (a skill): nothing is read back after the commit.
 */
export async function writeConfigObject(
  deps: Deps,
  actor: Actor,
  body: CreateConfigObjectBody,
): Promise<PlannedConfigObject> {
  const planned = await planConfigObject(deps, { orgId: actor.orgId, memberId: actor.memberId }, body, {
    sourceMode: body.sourceMode,
  })
  const pluginIds = [...new Set(body.pluginIds ?? [])]
  const write = (db: Db, rows: RowInsert[]) =>
    recordAudit(
      deps,
      db,
      actor,
      'config_object.created',
      { type: 'config_object', id: planned.id },
      { objectType: body.type, versionId: planned.versionId },
      rows,
    )
  const rows = [...planned.rows, creatorGrantRow(deps, actor, 'config_object', planned.id)]
  // Rows, grant, audit and change are one statement on PostgreSQL: atomic without a transaction,
  // unless an idempotency key must commit with them.
  if (pluginIds.length === 0 && insertsAreOneStatement(deps.db) && !commitsAreRecorded()) await write(deps.db, rows)
  else {
    await deps.db.transaction().execute(async (trx) => {
      for (const pluginId of pluginIds) await requireRole(trx, actor, 'plugin', pluginId, 'editor')
      // Adding to a plugin reads the plugin's membership first, so the object must exist by then.
      await insertRows(trx, rows)
      for (const pluginId of pluginIds) await addToPluginIn(deps, trx, actor, pluginId, planned.id, 'api')
      await write(trx, [])
    })
  }
  return planned
}

/** Adds an object to a plugin inside a transaction (no checks); 409 `already_in_plugin`. */
export async function addToPluginIn(
  deps: Deps,
  trx: Db,
  actor: Pick<Actor, 'orgId' | 'memberId'>,
  pluginId: string,
  objectId: string,
  source: 'manual' | 'api' | 'connector' | 'system',
  connectorMappingId: string | null = null,
): Promise<string> {
  const existing = await trx
    .selectFrom('plugin_config_object')
    .select('id')
    .where('plugin_id', '=', pluginId)
    .where('config_object_id', '=', objectId)
    .executeTakeFirst()
  if (existing) throw controlPlaneError('already_in_plugin', 'The config object is already in the plugin')
  const id = newId('pco')
  await trx
    .insertInto('plugin_config_object')
    .values({
      id,
      org_id: actor.orgId,
      plugin_id: pluginId,
      config_object_id: objectId,
      membership_source: source,
      connector_mapping_id: connectorMappingId,
      created_by_member_id: actor.memberId,
      created_at: isoAt(deps),
    })
    .execute()
  return id
}

/** Archives, deletes (soft) or restores an object; manager only. */
export async function changeLifecycle(
  deps: Deps,
  actor: Actor,
  id: string,
  action: keyof typeof LIFECYCLE,
): Promise<ConfigObjectView> {
  // The answer is read inside the transaction: a read after the commit could fail and turn a
  // change that was made into an error.
  return deps.db.transaction().execute(async (trx) => {
    await requireRole(trx, actor, 'config_object', id, 'manager')
    await changeLifecycleIn(deps, trx, actor.orgId, id, action)
    const event =
      action === 'archive'
        ? 'config_object.archived'
        : action === 'delete'
          ? 'config_object.deleted'
          : 'config_object.restored'
    await recordAudit(deps, trx, actor, event, { type: 'config_object', id })
    return objectView(await objectQuery(trx, actor.orgId).where('co.id', '=', id).executeTakeFirstOrThrow())
  })
}

/**
 * Access grants on catalog resources and the role resolution every catalog read and write goes
 * through. A grant gives one principal (a member, a team, or the whole organization) a role
 * `viewer < editor < manager` on one resource. Owners and admins act as manager everywhere.
 *
 * Effective role, highest wins:
 * - direct grants that apply to the caller (their member id, any of their teams, org-wide);
 * - a plugin listed in an active marketplace the caller can see → viewer (catalog inheritance);
 * - a config object in a plugin the caller can see, or in a skill hub the caller can see or
 *   receives → viewer;
 * - a skill hub assigned to the caller (member, team or organization) → viewer.
 *
 * Everything is computed in SQL as sets of visible ids (indexed from the caller's principals), so
 * lists are filtered by the database, never in memory, and a revoked grant stops applying on the
 * very next request. Ids the caller cannot see are 404, exactly like ids that do not exist.
 * @module
 */
import { sql, type Expression, type ExpressionBuilder, type Kysely, type RawBuilder, type SqlBool } from 'kysely'
import { newId } from '../../core/ids.ts'
import { insertRows } from '../../storage/row-inserts.ts'
import type { Actor } from '../admin/audit.ts'
import { recordAudit } from '../admin/audit.ts'
import { isUniqueViolation } from '../db-errors.ts'
import { isoAt, type Deps } from '../deps.ts'
import { keysetPage, type Page } from '../pagination.ts'
import type { ControlPlaneDb, Db } from '../schema.ts'
import { controlPlaneError } from '../control-plane-errors.ts'

/** Resources that carry access grants. */
export const RESOURCE_TYPES = [
  'config_object',
  'plugin',
  'marketplace',
  'skill_hub',
  'llm_provider',
  'connector_instance',
] as const
/** A resource type with grants. */
export type ResourceType = (typeof RESOURCE_TYPES)[number]
/** Grant roles, lowest first. */
export const GRANT_ROLES = ['viewer', 'editor', 'manager'] as const
/** A grant role. */
export type GrantRole = (typeof GRANT_ROLES)[number]

const RANK: Record<GrantRole, number> = { viewer: 1, editor: 2, manager: 3 }

/** The table holding each resource type and its 404 code. */
export const RESOURCE_TABLES = {
  config_object: { table: 'config_object', notFound: 'config_object_not_found', label: 'Config object' },
  plugin: { table: 'plugin', notFound: 'plugin_not_found', label: 'Plugin' },
  marketplace: { table: 'marketplace', notFound: 'marketplace_not_found', label: 'Marketplace' },
  skill_hub: { table: 'skill_hub', notFound: 'skill_hub_not_found', label: 'Skill hub' },
  llm_provider: { table: 'llm_provider', notFound: 'llm_provider_not_found', label: 'Model provider' },
  connector_instance: {
    table: 'connector_instance',
    notFound: 'connector_instance_not_found',
    label: 'Connector instance',
  },
} as const satisfies Record<ResourceType, { table: keyof ControlPlaneDb; notFound: string; label: string }>

/** The 404 for a resource the caller cannot see (or that does not exist: indistinguishable). */
export function notFound(type: ResourceType) {
  return controlPlaneError(RESOURCE_TABLES[type].notFound, `${RESOURCE_TABLES[type].label} not found`)
}

/** True for owners and admins, who act as manager on every catalog resource. */
export function isOrgAdmin(actor: Pick<Actor, 'role'>): boolean {
  return actor.role === 'owner' || actor.role === 'admin'
}

/** The higher of two roles (null is below viewer). */
export function maxRole(a: GrantRole | null, b: GrantRole | null): GrantRole | null {
  if (!a) return b
  if (!b) return a
  return RANK[a] >= RANK[b] ? a : b
}

/** True when `role` is at least `min`. */
export function atLeast(role: GrantRole | null, min: GrantRole): boolean {
  return role !== null && RANK[role] >= RANK[min]
}

// deno-lint-ignore no-explicit-any
type AnyEb = ExpressionBuilder<any, any>

/**
 * Grants of `type` that apply to the actor, as three branches (their member id, their teams,
 * org-wide) joined by UNION ALL rather than one OR, so each branch is an index range
 * `(org_id, resource_type, <principal>, …)` and the cost follows the caller's grants, not the
 * number of grants in the organization. `resourceId` narrows every branch to one resource.
 */
function applyingGrants(db: Db, actor: Pick<Actor, 'orgId' | 'memberId'>, type: ResourceType, resourceId?: string) {
  const branch = () => {
    let q = db
      .selectFrom('access_grant as g')
      .select(['g.resource_id', 'g.role'])
      .where('g.org_id', '=', actor.orgId)
      .where('g.resource_type', '=', type)
    if (resourceId !== undefined) q = q.where('g.resource_id', '=', resourceId)
    return q
  }
  return branch()
    .where('g.member_id', '=', actor.memberId)
    .unionAll(
      branch().where(
        'g.team_id',
        'in',
        db.selectFrom('team_member as tm').select('tm.team_id').where('tm.member_id', '=', actor.memberId),
      ),
    )
    .unionAll(branch().where('g.org_wide', '=', 1))
}

/** Ids of `type` the actor holds a direct grant on. */
export function grantedIds(db: Db, actor: Pick<Actor, 'orgId' | 'memberId'>, type: ResourceType) {
  const branch = () =>
    db
      .selectFrom('access_grant as g')
      .select('g.resource_id')
      .where('g.org_id', '=', actor.orgId)
      .where('g.resource_type', '=', type)
  return branch()
    .where('g.member_id', '=', actor.memberId)
    .unionAll(
      branch().where(
        'g.team_id',
        'in',
        db.selectFrom('team_member as tm').select('tm.team_id').where('tm.member_id', '=', actor.memberId),
      ),
    )
    .unionAll(branch().where('g.org_wide', '=', 1))
}

/** Ids of skill hubs assigned to the actor (as a member, through a team, or org-wide). */
export function assignedHubIds(db: Db, actor: Pick<Actor, 'orgId' | 'memberId'>) {
  const branch = () => db.selectFrom('skill_hub_assignment as a').select('a.hub_id').where('a.org_id', '=', actor.orgId)
  return branch()
    .where('a.member_id', '=', actor.memberId)
    .unionAll(
      branch().where(
        'a.team_id',
        'in',
        db.selectFrom('team_member as tm').select('tm.team_id').where('tm.member_id', '=', actor.memberId),
      ),
    )
    .unionAll(branch().where('a.org_wide', '=', 1))
}

/**
 * A condition "`column` is the id of a `type` resource the actor can see", for list queries.
 * Admins see everything in their organization (the caller scopes by org separately).
 */
export function visibleCondition(
  _db: Db,
  actor: Actor,
  type: ResourceType,
  column: string,
): (eb: AnyEb) => Expression<SqlBool> {
  return (eb) => {
    if (isOrgAdmin(actor)) return eb.lit(true) as unknown as Expression<SqlBool>
    return visibleSql(actor, type, sql.ref(column)) as unknown as Expression<SqlBool>
  }
}

/*
 * The visibility condition is written once as a parameterised SQL fragment (standard SQL: IN,
 * UNION ALL, joins) rather than through the query builder: it has a dozen nested subqueries, and
 * building and compiling that tree on every list request cost more than running it. The same
 * sets in builder form ({@link grantedIds}, {@link assignedHubIds}) serve single-row checks.
 */
function grantedSql(actor: Pick<Actor, 'orgId' | 'memberId'>, type: ResourceType): RawBuilder<unknown> {
  const head = sql`select g.resource_id from access_grant g where g.org_id = ${actor.orgId} and g.resource_type = ${type}`
  return sql`${head} and g.member_id = ${actor.memberId} union all ${head} and g.team_id in (select tm.team_id from team_member tm where tm.member_id = ${actor.memberId}) union all ${head} and g.org_wide = 1`
}

function assignedSql(actor: Pick<Actor, 'orgId' | 'memberId'>): RawBuilder<unknown> {
  const head = sql`select a.hub_id from skill_hub_assignment a where a.org_id = ${actor.orgId}`
  return sql`${head} and a.member_id = ${actor.memberId} union all ${head} and a.team_id in (select tm.team_id from team_member tm where tm.member_id = ${actor.memberId}) union all ${head} and a.org_wide = 1`
}

function viaMarketplaceSql(actor: Pick<Actor, 'orgId' | 'memberId'>): RawBuilder<unknown> {
  return sql`select mp.plugin_id from marketplace_plugin mp inner join marketplace mk on mk.id = mp.marketplace_id where mp.org_id = ${actor.orgId} and mk.status = 'active' and mp.marketplace_id in (${grantedSql(actor, 'marketplace')})`
}

/**
 * "`ref` is a `type` resource the actor can see", one parameterised fragment (the set form of the
 * visibility; {@link visibleCondition} answers `true` for admins instead).
 */
export function visibleSql(
  actor: Pick<Actor, 'orgId' | 'memberId'>,
  type: ResourceType,
  ref: RawBuilder<unknown> | ReturnType<typeof sql.ref>,
): RawBuilder<unknown> {
  const direct = sql`${ref} in (${grantedSql(actor, type)})`
  if (type === 'plugin') return sql`(${direct} or ${ref} in (${viaMarketplaceSql(actor)}))`
  if (type === 'skill_hub') return sql`(${direct} or ${ref} in (${assignedSql(actor)}))`
  if (type === 'config_object') {
    const plugins = sql`select pco.config_object_id from plugin_config_object pco where pco.org_id = ${actor.orgId} and (pco.plugin_id in (${grantedSql(actor, 'plugin')}) or pco.plugin_id in (${viaMarketplaceSql(actor)}))`
    const hubs = sql`select shs.config_object_id from skill_hub_skill shs where shs.org_id = ${actor.orgId} and (shs.hub_id in (${grantedSql(actor, 'skill_hub')}) or shs.hub_id in (${assignedSql(actor)}))`
    return sql`(${direct} or ${ref} in (${plugins}) or ${ref} in (${hubs}))`
  }
  return direct
}

/**
 * Ends each per-row EXISTS probe. PostgreSQL turns an EXISTS whose subquery it can simplify into a
 * hashed subplan when it expects many outer rows: it then builds the set of every grant or hub
 * entry of the organization once per statement, which grows with the catalog, instead of probing
 * the rows a page passes (a wide member's first page at 6,000 skills: 6.0 ms against 3.7 ms probed;
 * with no statistics, seconds). An OFFSET keeps it from simplifying the subquery, so the probe stays
 * per row; `limit 1 offset 0` is valid and changes nothing on both engines.
 */
const PROBE = sql.raw('limit 1 offset 0')

/**
 * The visibility of {@link visibleSql} for config objects, as a check of the one row `ref` names:
 * EXISTS probes keyed by that id (a grant on it, a visible plugin holding it, a visible or
 * assigned hub holding it) instead of the set of every visible id. A list walking its index in id
 * order then pays per row it passes, not per object the member can reach; the small sets inside
 * (the member's teams, visible plugins and hubs) do not depend on the row and are computed once
 * per statement. Must stay equivalent to {@link visibleSql} (the list tests compare both forms).
 *
 * The probes carry no `org_id` term: ids are unique across organizations, the row is already in
 * the caller's organization and so is everything attached to it, and an `org_id` term lets a
 * planner without statistics pick an `(org_id, resource_type, …)` index and scan every grant of
 * the type instead of probing the one resource.
 */
export function visibleRowSql(
  actor: Pick<Actor, 'orgId' | 'memberId'>,
  ref: RawBuilder<unknown> | ReturnType<typeof sql.ref>,
): RawBuilder<unknown> {
  const plugins = sql`exists (select 1 from plugin_config_object pco where pco.config_object_id = ${ref} and (pco.plugin_id in (${grantedSql(actor, 'plugin')}) or pco.plugin_id in (${viaMarketplaceSql(actor)})) ${PROBE})`
  const hubs = sql`exists (select 1 from skill_hub_skill shs where shs.config_object_id = ${ref} and (shs.hub_id in (${grantedSql(actor, 'skill_hub')}) or shs.hub_id in (${assignedSql(actor)})) ${PROBE})`
  return sql`(${grantExistsSql(actor, 'config_object', ref)} or ${plugins} or ${hubs})`
}

/**
 * "The actor receives config object `ref`" (a grant on it, or a hub assigned to them holding it)
 * as a check of that one row; the row form of the set `listReceivedSkills` filters by.
 */
export function receivedRowSql(
  actor: Pick<Actor, 'orgId' | 'memberId'>,
  ref: RawBuilder<unknown> | ReturnType<typeof sql.ref>,
): RawBuilder<unknown> {
  return sql`(${grantExistsSql(actor, 'config_object', ref)} or ${assignedHubExistsSql(actor, ref)})`
}

/**
 * Ids of the config objects the actor can see, as a UNION ALL of index ranges driven from what
 * they hold (their grants, the objects of each plugin and hub they see; an id may repeat). As
 * one `co.id IN (…)` a planner looks the few reachable rows up by id, where the OR of `IN`s of
 * {@link visibleSql} makes it walk the catalog testing each row. Same set as {@link visibleSql}.
 */
export function visibleIdsSql(actor: Pick<Actor, 'orgId' | 'memberId'>): RawBuilder<unknown> {
  const pco = sql`select pco.config_object_id from plugin_config_object pco where pco.org_id = ${actor.orgId} and pco.plugin_id in`
  const shs = sql`select shs.config_object_id from skill_hub_skill shs where shs.org_id = ${actor.orgId} and shs.hub_id in`
  return sql`${grantedSql(actor, 'config_object')} union all ${pco} (${grantedSql(actor, 'plugin')}) union all ${pco} (${viaMarketplaceSql(actor)}) union all ${shs} (${grantedSql(actor, 'skill_hub')}) union all ${shs} (${assignedSql(actor)})`
}

/** Ids of the config objects the actor receives (a grant, or an assigned hub), as {@link visibleIdsSql} does it. */
export function receivedIdsSql(actor: Pick<Actor, 'orgId' | 'memberId'>): RawBuilder<unknown> {
  return sql`${grantedSql(actor, 'config_object')} union all select shs.config_object_id from skill_hub_skill shs where shs.org_id = ${actor.orgId} and shs.hub_id in (${assignedSql(actor)})`
}

/**
 * A hub assigned to the actor that holds config object `ref`, probed from the row: the object's
 * hubs through `(config_object_id, hub_id)`, then each hub's assignments through their hub index,
 * the member's teams hashed once. Written as a join rather than `hub_id IN (the member's hubs)`:
 * PostgreSQL re-ran that set for every row the walk passed (3.6 ms against 1.1 for a wide
 * member's page of received skills). {@link visibleRowSql} keeps the `IN` form: a join through
 * hub grants as well made SQLite's plan for a wide member's first page 2.5 times slower, and
 * PostgreSQL plans that form well once the probe stays per row ({@link PROBE}).
 */
function assignedHubExistsSql(
  actor: Pick<Actor, 'orgId' | 'memberId'>,
  ref: RawBuilder<unknown> | ReturnType<typeof sql.ref>,
): RawBuilder<unknown> {
  const teams = sql`(select tm.team_id from team_member tm where tm.member_id = ${actor.memberId})`
  return sql`exists (select 1 from skill_hub_skill shs inner join skill_hub_assignment a on a.hub_id = shs.hub_id where shs.config_object_id = ${ref} and (a.member_id = ${actor.memberId} or a.org_wide = 1 or a.team_id in ${teams}) ${PROBE})`
}

/** A grant of `type` on `ref` applying to the actor, probed through `(resource_type, resource_id)`. */
function grantExistsSql(
  actor: Pick<Actor, 'orgId' | 'memberId'>,
  type: ResourceType,
  ref: RawBuilder<unknown> | ReturnType<typeof sql.ref>,
): RawBuilder<unknown> {
  return sql`exists (select 1 from access_grant g where g.resource_type = ${type} and g.resource_id = ${ref} and (g.member_id = ${actor.memberId} or g.org_wide = 1 or g.team_id in (select tm.team_id from team_member tm where tm.member_id = ${actor.memberId})) ${PROBE})`
}

async function directRole(db: Db, actor: Actor, type: ResourceType, id: string): Promise<GrantRole | null> {
  const rows = await applyingGrants(db, actor, type, id).execute()
  return rows.reduce<GrantRole | null>((best, row) => maxRole(best, row.role as GrantRole), null)
}

/** The best role the actor holds by a grant of their own (member, team or org-wide), ignoring admin rights. */
export function explicitRole(db: Db, actor: Actor, type: ResourceType, id: string): Promise<GrantRole | null> {
  return directRole(db, actor, type, id)
}

async function exists(db: Db, orgId: string, type: ResourceType, id: string): Promise<boolean> {
  const { table } = RESOURCE_TABLES[type]
  // deno-lint-ignore no-explicit-any
  const row = await (db as Kysely<any>)
    .selectFrom(table)
    .select('id')
    .where('id', '=', id)
    .where('org_id', '=', orgId)
    .executeTakeFirst()
  return row !== undefined
}

/** The actor's effective role on a resource of their organization, or null when they cannot see it. */
export async function effectiveRole(db: Db, actor: Actor, type: ResourceType, id: string): Promise<GrantRole | null> {
  if (!(await exists(db, actor.orgId, type, id))) return null
  if (isOrgAdmin(actor)) return 'manager'
  const direct = await directRole(db, actor, type, id)
  if (direct === 'manager' || type === 'marketplace' || type === 'llm_provider') return direct
  // Inherited visibility is viewer at most, so only ask when nothing direct applies.
  if (direct) return direct
  const visible = await db
    .selectFrom(RESOURCE_TABLES[type].table as 'plugin')
    .select('id')
    .where('id', '=', id)
    .where(visibleCondition(db, actor, type, 'id'))
    .executeTakeFirst()
  return visible ? 'viewer' : null
}

/**
 * The actor's role on a resource, requiring at least `min`: 404 when they cannot see it at all
 * (so its existence is not revealed), 403 when they can see it but their role is too low.
 */
export async function requireRole(
  db: Db,
  actor: Actor,
  type: ResourceType,
  id: string,
  min: GrantRole,
): Promise<GrantRole> {
  const role = await effectiveRole(db, actor, type, id)
  if (!role) throw notFound(type)
  if (!atLeast(role, min)) {
    throw controlPlaneError(
      'forbidden',
      `Needs the ${min} role on this ${RESOURCE_TABLES[type].label.toLowerCase()}; you have ${role}`,
      { details: { requiredRole: min, role } },
    )
  }
  return role
}

/** A grant target: exactly one of a member, a team, or the whole organization. */
export type GrantPrincipal = { memberId: string } | { teamId: string } | { orgWide: true }

/** An access grant as the API shows it. */
export interface GrantView {
  id: string
  resourceType: ResourceType
  resourceId: string
  memberId: string | null
  teamId: string | null
  orgWide: boolean
  role: GrantRole
  createdByMemberId: string | null
  createdAt: string
  updatedAt: string
}

type GrantRow = ControlPlaneDb['access_grant']

function grantView(row: GrantRow): GrantView {
  return {
    id: row.id,
    resourceType: row.resource_type as ResourceType,
    resourceId: row.resource_id,
    memberId: row.member_id,
    teamId: row.team_id,
    orgWide: row.org_wide === 1,
    role: row.role as GrantRole,
    createdByMemberId: row.created_by_member_id,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  }
}

/** `member:<id>`, `team:<id>` or `org`: the unique key of a principal on one resource. */
export function principalKey(principal: GrantPrincipal): string {
  if ('memberId' in principal) return `member:${principal.memberId}`
  if ('teamId' in principal) return `team:${principal.teamId}`
  return 'org'
}

/** Checks that a member or team principal belongs to the organization (404 otherwise). */
export async function requirePrincipal(db: Db, orgId: string, principal: GrantPrincipal): Promise<void> {
  if ('memberId' in principal) {
    const row = await db
      .selectFrom('member')
      .select('id')
      .where('id', '=', principal.memberId)
      .where('org_id', '=', orgId)
      .executeTakeFirst()
    if (!row) throw controlPlaneError('member_not_found', 'Member not found')
  } else if ('teamId' in principal) {
    const row = await db
      .selectFrom('team')
      .select('id')
      .where('id', '=', principal.teamId)
      .where('org_id', '=', orgId)
      .executeTakeFirst()
    if (!row) throw controlPlaneError('team_not_found', 'Team not found')
  }
}

/**
 * Sets a principal's role on a resource inside an open transaction (insert, or change the role of
 * the existing grant); no checks. Used by {@link grantAccess}; a creator's grant uses {@link grantCreator}.
 */
async function upsertGrant(
  deps: Deps,
  trx: Db,
  orgId: string,
  type: ResourceType,
  resourceId: string,
  principal: GrantPrincipal,
  role: GrantRole,
  createdBy: string | null,
): Promise<string> {
  const key = principalKey(principal)
  const now = isoAt(deps)
  const existing = await trx
    .selectFrom('access_grant')
    .select('id')
    .where('resource_type', '=', type)
    .where('resource_id', '=', resourceId)
    .where('principal_key', '=', key)
    .executeTakeFirst()
  if (existing) {
    await trx
      .updateTable('access_grant')
      .set({ role, updated_at: now, created_by_member_id: createdBy })
      .where('id', '=', existing.id)
      .execute()
    return existing.id
  }
  const insert = grantRow(deps, orgId, type, resourceId, principal, role, createdBy)
  await insertRows(trx, [insert])
  return insert.row.id
}

/** A new grant as a row to insert (`storage/row-inserts.ts`). */
type GrantInsert = { table: 'access_grant'; row: ControlPlaneDb['access_grant'] }

/** The row of a new grant. */
function grantRow(
  deps: Deps,
  orgId: string,
  type: ResourceType,
  resourceId: string,
  principal: GrantPrincipal,
  role: GrantRole,
  createdBy: string | null,
): GrantInsert {
  const now = isoAt(deps)
  return {
    table: 'access_grant',
    row: {
      id: newId('agr'),
      org_id: orgId,
      resource_type: type,
      resource_id: resourceId,
      member_id: 'memberId' in principal ? principal.memberId : null,
      team_id: 'teamId' in principal ? principal.teamId : null,
      org_wide: 'orgWide' in principal ? 1 : 0,
      principal_key: principalKey(principal),
      role,
      created_by_member_id: createdBy,
      created_at: now,
      updated_at: now,
    },
  }
}

/**
 * The creator's manager grant on a resource created in the same transaction, as a row to insert
 * with the resource's own (`recordAudit`'s `alongside`); {@link grantCreator} inserts it alone.
 */
export function creatorGrantRow(
  deps: Deps,
  actor: Pick<Actor, 'orgId' | 'memberId'>,
  type: ResourceType,
  resourceId: string,
): GrantInsert {
  return grantRow(deps, actor.orgId, type, resourceId, { memberId: actor.memberId }, 'manager', actor.memberId)
}

/**
 * Makes the creator of a resource its manager, in the transaction that created it. The resource is
 * new, so no grant can exist: an insert, without {@link upsertGrant}'s lookup, which on PostgreSQL
 * would also read the index range where concurrent creates insert (a SERIALIZABLE conflict).
 */
export async function grantCreator(
  deps: Deps,
  trx: Db,
  actor: Pick<Actor, 'orgId' | 'memberId'>,
  type: ResourceType,
  resourceId: string,
): Promise<string> {
  const insert = creatorGrantRow(deps, actor, type, resourceId)
  await insertRows(trx, [insert])
  return insert.row.id
}

/** Grants on a resource (manager only), oldest first. */
export async function listGrants(
  deps: Deps,
  actor: Actor,
  type: ResourceType,
  resourceId: string,
  page: { cursor?: string; limit: number },
): Promise<Page<GrantView>> {
  await requireRole(deps.db, actor, type, resourceId, 'manager')
  const query = deps.db
    .selectFrom('access_grant')
    .selectAll()
    .where('resource_type', '=', type)
    .where('resource_id', '=', resourceId)
  return keysetPage(query, {
    scope: `access:${resourceId}`,
    cursor: page.cursor,
    limit: page.limit,
    order: [{ column: 'id', field: 'id', direction: 'asc' }],
    map: grantView,
  })
}

/**
 * Gives a principal a role on a resource (manager only). Granting to a principal that already
 * has a grant changes its role. Only owners and admins may grant org-wide (403 otherwise).
 */
export async function grantAccess(
  deps: Deps,
  actor: Actor,
  type: ResourceType,
  resourceId: string,
  principal: GrantPrincipal,
  role: GrantRole,
): Promise<GrantView> {
  const attempt = () =>
    deps.db.transaction().execute(async (trx) => {
      await requireRole(trx, actor, type, resourceId, 'manager')
      if ('orgWide' in principal && !isOrgAdmin(actor))
        throw controlPlaneError('forbidden', 'Only owners and admins may grant access to the whole organization', {
          details: {
            requiredOrgRole: 'admin',
          },
        })
      await requirePrincipal(trx, actor.orgId, principal)
      const id = await upsertGrant(deps, trx, actor.orgId, type, resourceId, principal, role, actor.memberId)
      await recordAudit(
        deps,
        trx,
        actor,
        'access.granted',
        { type, id: resourceId },
        { grantId: id, principal: principalKey(principal).split(':')[0]!, role },
      )
      return id
    })
  let id: string
  try {
    id = await attempt()
  } catch (error) {
    // A concurrent grant to the same principal won the insert; ours becomes a role change.
    if (!isUniqueViolation(error)) throw error
    id = await attempt()
  }
  const row = await deps.db.selectFrom('access_grant').selectAll().where('id', '=', id).executeTakeFirstOrThrow()
  return grantView(row)
}

/** Removes a grant (manager only); it stops applying at once. 404 `access_grant_not_found`. */
export async function revokeAccess(
  deps: Deps,
  actor: Actor,
  type: ResourceType,
  resourceId: string,
  grantId: string,
): Promise<void> {
  await deps.db.transaction().execute(async (trx) => {
    await requireRole(trx, actor, type, resourceId, 'manager')
    const deleted = await trx
      .deleteFrom('access_grant')
      .where('id', '=', grantId)
      .where('resource_type', '=', type)
      .where('resource_id', '=', resourceId)
      .executeTakeFirst()
    if (Number(deleted.numDeletedRows) === 0)
      throw controlPlaneError('access_grant_not_found', 'Access grant not found')
    await recordAudit(deps, trx, actor, 'access.revoked', { type, id: resourceId }, { grantId })
  })
}

/** Deletes every grant on a resource (when the resource itself is deleted). */
export async function dropGrants(trx: Db, type: ResourceType, resourceId: string): Promise<void> {
  await trx.deleteFrom('access_grant').where('resource_type', '=', type).where('resource_id', '=', resourceId).execute()
}

/**
 * What a member can see, as SQL: the sets of resources their grants, teams, marketplaces and
 * assigned skill hubs reach, and the same visibility as a per-row check.
 *
 * Visible, highest role aside (`access-grants.ts` resolves the role):
 * - a resource with a grant that applies to the caller (their member id, any of their teams,
 *   org-wide);
 * - a plugin listed in an active marketplace the caller can see;
 * - a config object in a plugin the caller can see, or in a skill hub the caller can see or
 *   receives;
 * - a skill hub assigned to the caller (member, team or organization).
 *
 * Everything is computed in SQL from the caller's principals (indexed), so lists are filtered by
 * the database, never in memory, and a revoked grant stops applying on the very next request.
 * @module
 */
import {
  sql,
  type Expression,
  type ExpressionBuilder,
  type RawBuilder,
  type SelectQueryBuilder,
  type SqlBool,
} from 'kysely'
import type { Actor } from '../actor.ts'
import type { Db } from '../schema.ts'
import { isOrgAdmin, type ResourceType } from './grant-roles.ts'

// deno-lint-ignore no-explicit-any
type AnyEb = ExpressionBuilder<any, any>

/**
 * `branch` once for each of the actor's principals (their member id, any of their teams, org-wide)
 * joined by UNION ALL rather than one OR, so each branch is an index range `(…, <principal>, …)`
 * and the cost follows what applies to the caller, not the size of the organization. `alias` names
 * the branch's table, which has `member_id`, `team_id` and `org_wide` columns (grants, hub
 * assignments).
 */
// deno-lint-ignore no-explicit-any
export function forEachPrincipal<Q extends SelectQueryBuilder<any, any, any>>(
  db: Db,
  actor: Pick<Actor, 'memberId'>,
  alias: 'g' | 'a',
  branch: () => Q,
): Q {
  const teams = db.selectFrom('team_member as tm').select('tm.team_id').where('tm.member_id', '=', actor.memberId)
  return branch()
    .where(sql.ref(`${alias}.member_id`), '=', actor.memberId)
    .unionAll(branch().where(sql.ref(`${alias}.team_id`), 'in', teams))
    .unionAll(branch().where(sql.ref(`${alias}.org_wide`), '=', 1)) as Q
}

/** Ids of `type` the actor holds a direct grant on. */
export function grantedIds(db: Db, actor: Pick<Actor, 'orgId' | 'memberId'>, type: ResourceType) {
  return forEachPrincipal(db, actor, 'g', () =>
    db
      .selectFrom('access_grant as g')
      .select('g.resource_id')
      .where('g.org_id', '=', actor.orgId)
      .where('g.resource_type', '=', type),
  )
}

/** Ids of skill hubs assigned to the actor (as a member, through a team, or org-wide). */
export function assignedHubIds(db: Db, actor: Pick<Actor, 'orgId' | 'memberId'>) {
  return forEachPrincipal(db, actor, 'a', () =>
    db.selectFrom('skill_hub_assignment as a').select('a.hub_id').where('a.org_id', '=', actor.orgId),
  )
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
 *
 * `after` (a later page's cursor) keeps only ids above it, inside every branch: each is then a
 * range from the cursor (`(…, resource_id)` on grants, `(plugin_id, config_object_id)` and
 * `(hub_id, config_object_id)` on contents), so a deep page reads what follows it, not all the
 * member reaches (a member receiving every hub: 5,400 ids read for the last page at 6,000 skills).
 */
export function visibleIdsSql(actor: Pick<Actor, 'orgId' | 'memberId'>, after?: unknown): RawBuilder<unknown> {
  const from = (column: string) => (after === undefined ? sql`` : sql` and ${sql.ref(column)} > ${after}`)
  const pco = (plugins: RawBuilder<unknown>) =>
    sql`select pco.config_object_id from plugin_config_object pco where pco.org_id = ${actor.orgId}${from('pco.config_object_id')} and pco.plugin_id in (${plugins})`
  const shs = (hubs: RawBuilder<unknown>) =>
    sql`select shs.config_object_id from skill_hub_skill shs where shs.org_id = ${actor.orgId}${from('shs.config_object_id')} and shs.hub_id in (${hubs})`
  return sql`${grantedObjectsSql(actor, after)} union all ${pco(grantedSql(actor, 'plugin'))} union all ${pco(viaMarketplaceSql(actor))} union all ${shs(grantedSql(actor, 'skill_hub'))} union all ${shs(assignedSql(actor))}`
}

/** Ids of the config objects the actor receives (a grant, or an assigned hub), as {@link visibleIdsSql} does it (`after` alike). */
export function receivedIdsSql(actor: Pick<Actor, 'orgId' | 'memberId'>, after?: unknown): RawBuilder<unknown> {
  const from = after === undefined ? sql`` : sql` and shs.config_object_id > ${after}`
  return sql`${grantedObjectsSql(actor, after)} union all select shs.config_object_id from skill_hub_skill shs where shs.org_id = ${actor.orgId}${from} and shs.hub_id in (${assignedSql(actor)})`
}

/** {@link grantedSql} for config objects, each branch starting after `after` when given. */
function grantedObjectsSql(actor: Pick<Actor, 'orgId' | 'memberId'>, after?: unknown): RawBuilder<unknown> {
  if (after === undefined) return grantedSql(actor, 'config_object')
  const head = sql`select g.resource_id from access_grant g where g.org_id = ${actor.orgId} and g.resource_type = 'config_object' and g.resource_id > ${after}`
  return sql`${head} and g.member_id = ${actor.memberId} union all ${head} and g.team_id in (select tm.team_id from team_member tm where tm.member_id = ${actor.memberId}) union all ${head} and g.org_wide = 1`
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

/**
 * The principals (`access_grant.principal_key` form: `member:<id>`, `team:<id>`, `org`) through
 * whom resource `id` is visible now: the same rules as {@link visibleSql} read from the resource's
 * side (its grants; for a plugin, the grants of active marketplaces listing it; for a hub, its
 * assignments; for a config object, all of these through the plugins and hubs holding it). The
 * change feed stores this set with an event when it is written (`events/change-audience.ts`), so
 * a member's feed reads an index of their principals instead of checking events one by one. Must
 * stay equivalent to {@link visibleSql} (the feed's visibility tests compare both).
 */
export function resourcePrincipalsSql(type: ResourceType, id: string): RawBuilder<{ k: string }> {
  const grants = (t: ResourceType, ref: RawBuilder<unknown>) =>
    sql`select g.principal_key as k from access_grant g where g.resource_type = ${t} and g.resource_id = ${ref}`
  const viaMarketplace = (plugin: RawBuilder<unknown>) =>
    sql`select g.principal_key as k from marketplace_plugin mp inner join marketplace mk on mk.id = mp.marketplace_id inner join access_grant g on g.resource_type = 'marketplace' and g.resource_id = mp.marketplace_id where mp.plugin_id = ${plugin} and mk.status = 'active'`
  const assigned = (hub: RawBuilder<unknown>) =>
    sql`select a.principal_key as k from skill_hub_assignment a where a.hub_id = ${hub}`
  const self = sql`${id}`
  if (type === 'plugin') return sql<{ k: string }>`${grants('plugin', self)} union ${viaMarketplace(self)}`
  if (type === 'skill_hub') return sql<{ k: string }>`${grants('skill_hub', self)} union ${assigned(self)}`
  if (type !== 'config_object') return sql<{ k: string }>`${grants(type, self)}`
  const plugins = sql`select pco.plugin_id from plugin_config_object pco where pco.config_object_id = ${id}`
  const hubs = sql`select shs.hub_id from skill_hub_skill shs where shs.config_object_id = ${id}`
  return sql<{ k: string }>`${grants('config_object', self)}
    union select g.principal_key as k from access_grant g where g.resource_type = 'plugin' and g.resource_id in (${plugins})
    union select g.principal_key as k from marketplace_plugin mp inner join marketplace mk on mk.id = mp.marketplace_id inner join access_grant g on g.resource_type = 'marketplace' and g.resource_id = mp.marketplace_id where mp.plugin_id in (${plugins}) and mk.status = 'active'
    union select g.principal_key as k from access_grant g where g.resource_type = 'skill_hub' and g.resource_id in (${hubs})
    union select a.principal_key as k from skill_hub_assignment a where a.hub_id in (${hubs})`
}

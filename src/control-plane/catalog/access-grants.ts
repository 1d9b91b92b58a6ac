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
import type { Expression, ExpressionBuilder, Kysely, SqlBool, Transaction } from 'kysely'
import { errors } from '../../core/errors.ts'
import { newId } from '../../core/ids.ts'
import type { Actor } from '../admin/audit.ts'
import { recordAudit } from '../admin/audit.ts'
import { isUniqueViolation } from '../db-errors.ts'
import { isoAt, type Deps } from '../deps.ts'
import { keysetPage, type Page } from '../pagination.ts'
import type { ControlPlaneDb } from '../schema.ts'

/** Resources that carry access grants. */
export const RESOURCE_TYPES = ['config_object', 'plugin', 'marketplace', 'skill_hub', 'llm_provider', 'connector_instance'] as const
/** A resource type with grants. */
export type ResourceType = (typeof RESOURCE_TYPES)[number]
/** Grant roles, lowest first. */
export const GRANT_ROLES = ['viewer', 'editor', 'manager'] as const
/** A grant role. */
export type GrantRole = (typeof GRANT_ROLES)[number]

const RANK: Record<GrantRole, number> = { viewer: 1, editor: 2, manager: 3 }

/** A database handle or an open transaction. */
export type Db = Kysely<ControlPlaneDb> | Transaction<ControlPlaneDb>

/** The table holding each resource type and its 404 code. */
export const RESOURCE_TABLES = {
  config_object: { table: 'config_object', notFound: 'config_object_not_found', label: 'Config object' },
  plugin: { table: 'plugin', notFound: 'plugin_not_found', label: 'Plugin' },
  marketplace: { table: 'marketplace', notFound: 'marketplace_not_found', label: 'Marketplace' },
  skill_hub: { table: 'skill_hub', notFound: 'skill_hub_not_found', label: 'Skill hub' },
  llm_provider: { table: 'llm_provider', notFound: 'llm_provider_not_found', label: 'Model provider' },
  connector_instance: { table: 'connector_instance', notFound: 'connector_instance_not_found', label: 'Connector instance' },
} as const satisfies Record<ResourceType, { table: keyof ControlPlaneDb; notFound: string; label: string }>

/** The 404 for a resource the caller cannot see (or that does not exist: indistinguishable). */
export function notFound(type: ResourceType) {
  return errors.notFound(RESOURCE_TABLES[type].notFound, `${RESOURCE_TABLES[type].label} not found`)
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

/** Grants of `type` that apply to the actor (their member id, their teams, or org-wide). */
function applyingGrants(db: Db, actor: Pick<Actor, 'orgId' | 'memberId'>, type: ResourceType) {
  return db
    .selectFrom('access_grant as g')
    .where('g.org_id', '=', actor.orgId)
    .where('g.resource_type', '=', type)
    .where((eb) => eb.or([
      eb('g.member_id', '=', actor.memberId),
      eb('g.team_id', 'in', eb.selectFrom('team_member as tm').select('tm.team_id').where('tm.member_id', '=', actor.memberId)),
      eb('g.org_wide', '=', 1),
    ]))
}

/** Ids of `type` the actor holds a direct grant on. */
export function grantedIds(db: Db, actor: Pick<Actor, 'orgId' | 'memberId'>, type: ResourceType) {
  return applyingGrants(db, actor, type).select('g.resource_id')
}

/** Ids of skill hubs assigned to the actor (as a member, through a team, or org-wide). */
export function assignedHubIds(db: Db, actor: Pick<Actor, 'orgId' | 'memberId'>) {
  return db
    .selectFrom('skill_hub_assignment as a')
    .select('a.hub_id')
    .where('a.org_id', '=', actor.orgId)
    .where((eb) => eb.or([
      eb('a.member_id', '=', actor.memberId),
      eb('a.team_id', 'in', eb.selectFrom('team_member as tm').select('tm.team_id').where('tm.member_id', '=', actor.memberId)),
      eb('a.org_wide', '=', 1),
    ]))
}

/**
 * A condition "`column` is the id of a `type` resource the actor can see", for list queries.
 * Admins see everything in their organization (the caller scopes by org separately).
 */
export function visibleCondition(db: Db, actor: Actor, type: ResourceType, column: string): (eb: AnyEb) => Expression<SqlBool> {
  return (eb) => {
    if (isOrgAdmin(actor)) return eb.lit(true) as unknown as Expression<SqlBool>
    const ref = eb.ref(column)
    const direct = eb(ref, 'in', grantedIds(db, actor, type))
    if (type === 'plugin') {
      return eb.or([direct, eb(ref, 'in', viaMarketplace(db, actor))])
    }
    if (type === 'skill_hub') return eb.or([direct, eb(ref, 'in', assignedHubIds(db, actor))])
    if (type === 'config_object') {
      const plugins = db.selectFrom('plugin_config_object as pco').select('pco.config_object_id').where('pco.org_id', '=', actor.orgId)
        .where((e) => e.or([e('pco.plugin_id', 'in', grantedIds(db, actor, 'plugin')), e('pco.plugin_id', 'in', viaMarketplace(db, actor))]))
      const hubs = db.selectFrom('skill_hub_skill as shs').select('shs.config_object_id').where('shs.org_id', '=', actor.orgId)
        .where((e) => e.or([e('shs.hub_id', 'in', grantedIds(db, actor, 'skill_hub')), e('shs.hub_id', 'in', assignedHubIds(db, actor))]))
      return eb.or([direct, eb(ref, 'in', plugins), eb(ref, 'in', hubs)])
    }
    return direct
  }
}

/** Plugin ids listed in an active marketplace the actor holds a grant on. */
function viaMarketplace(db: Db, actor: Actor) {
  return db
    .selectFrom('marketplace_plugin as mp')
    .innerJoin('marketplace as mk', 'mk.id', 'mp.marketplace_id')
    .select('mp.plugin_id')
    .where('mp.org_id', '=', actor.orgId)
    .where('mk.status', '=', 'active')
    .where('mp.marketplace_id', 'in', grantedIds(db, actor, 'marketplace'))
}

async function directRole(db: Db, actor: Actor, type: ResourceType, id: string): Promise<GrantRole | null> {
  const rows = await applyingGrants(db, actor, type).select('g.role').where('g.resource_id', '=', id).execute()
  return rows.reduce<GrantRole | null>((best, row) => maxRole(best, row.role as GrantRole), null)
}

/** The best role the actor holds by a grant of their own (member, team or org-wide), ignoring admin rights. */
export function explicitRole(db: Db, actor: Actor, type: ResourceType, id: string): Promise<GrantRole | null> {
  return directRole(db, actor, type, id)
}

async function exists(db: Db, orgId: string, type: ResourceType, id: string): Promise<boolean> {
  const { table } = RESOURCE_TABLES[type]
  // deno-lint-ignore no-explicit-any
  const row = await (db as Kysely<any>).selectFrom(table).select('id').where('id', '=', id).where('org_id', '=', orgId).executeTakeFirst()
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
export async function requireRole(db: Db, actor: Actor, type: ResourceType, id: string, min: GrantRole): Promise<GrantRole> {
  const role = await effectiveRole(db, actor, type, id)
  if (!role) throw notFound(type)
  if (!atLeast(role, min)) {
    throw errors.forbidden(`Needs the ${min} role on this ${RESOURCE_TABLES[type].label.toLowerCase()}; you have ${role}`, { requiredRole: min, role })
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
    const row = await db.selectFrom('member').select('id').where('id', '=', principal.memberId).where('org_id', '=', orgId).executeTakeFirst()
    if (!row) throw errors.notFound('member_not_found', 'Member not found')
  } else if ('teamId' in principal) {
    const row = await db.selectFrom('team').select('id').where('id', '=', principal.teamId).where('org_id', '=', orgId).executeTakeFirst()
    if (!row) throw errors.notFound('team_not_found', 'Team not found')
  }
}

/**
 * Sets a principal's role on a resource inside an open transaction (insert, or change the role of
 * the existing grant); no checks. Used for the creator's manager grant and by {@link grantAccess}.
 */
export async function upsertGrant(deps: Deps, trx: Db, orgId: string, type: ResourceType, resourceId: string, principal: GrantPrincipal, role: GrantRole, createdBy: string | null): Promise<string> {
  const key = principalKey(principal)
  const now = isoAt(deps)
  const existing = await trx.selectFrom('access_grant').select('id').where('resource_type', '=', type).where('resource_id', '=', resourceId).where('principal_key', '=', key).executeTakeFirst()
  if (existing) {
    await trx.updateTable('access_grant').set({ role, updated_at: now, created_by_member_id: createdBy }).where('id', '=', existing.id).execute()
    return existing.id
  }
  const id = newId('agr')
  await trx.insertInto('access_grant').values({
    id,
    org_id: orgId,
    resource_type: type,
    resource_id: resourceId,
    member_id: 'memberId' in principal ? principal.memberId : null,
    team_id: 'teamId' in principal ? principal.teamId : null,
    org_wide: 'orgWide' in principal ? 1 : 0,
    principal_key: key,
    role,
    created_by_member_id: createdBy,
    created_at: now,
    updated_at: now,
  }).execute()
  return id
}

/** Grants on a resource (manager only), oldest first. */
export async function listGrants(deps: Deps, actor: Actor, type: ResourceType, resourceId: string, page: { cursor?: string; limit: number }): Promise<Page<GrantView>> {
  await requireRole(deps.db, actor, type, resourceId, 'manager')
  const query = deps.db.selectFrom('access_grant').selectAll().where('resource_type', '=', type).where('resource_id', '=', resourceId)
  return keysetPage(query, { scope: `access:${resourceId}`, cursor: page.cursor, limit: page.limit, order: [{ column: 'id', field: 'id', direction: 'asc' }], map: grantView })
}

/**
 * Gives a principal a role on a resource (manager only). Granting to a principal that already
 * has a grant changes its role. Only owners and admins may grant org-wide (403 otherwise).
 */
export async function grantAccess(deps: Deps, actor: Actor, type: ResourceType, resourceId: string, principal: GrantPrincipal, role: GrantRole): Promise<GrantView> {
  const attempt = () => deps.db.transaction().execute(async (trx) => {
    await requireRole(trx, actor, type, resourceId, 'manager')
    if ('orgWide' in principal && !isOrgAdmin(actor)) throw errors.forbidden('Only owners and admins may grant access to the whole organization', { requiredOrgRole: 'admin' })
    await requirePrincipal(trx, actor.orgId, principal)
    const id = await upsertGrant(deps, trx, actor.orgId, type, resourceId, principal, role, actor.memberId)
    await recordAudit(deps, trx, actor, 'access.granted', { type, id: resourceId }, { grantId: id, principal: principalKey(principal).split(':')[0]!, role })
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
export async function revokeAccess(deps: Deps, actor: Actor, type: ResourceType, resourceId: string, grantId: string): Promise<void> {
  await deps.db.transaction().execute(async (trx) => {
    await requireRole(trx, actor, type, resourceId, 'manager')
    const deleted = await trx.deleteFrom('access_grant').where('id', '=', grantId).where('resource_type', '=', type).where('resource_id', '=', resourceId).executeTakeFirst()
    if (Number(deleted.numDeletedRows) === 0) throw errors.notFound('access_grant_not_found', 'Access grant not found')
    await recordAudit(deps, trx, actor, 'access.revoked', { type, id: resourceId }, { grantId })
  })
}

/** Deletes every grant on a resource (when the resource itself is deleted). */
export async function dropGrants(trx: Db, type: ResourceType, resourceId: string): Promise<void> {
  await trx.deleteFrom('access_grant').where('resource_type', '=', type).where('resource_id', '=', resourceId).execute()
}

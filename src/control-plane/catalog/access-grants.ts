/**
 * Access grants on catalog resources and the role resolution every catalog read and write goes
 * through. A grant gives one principal (a member, a team, or the whole organization) a role on one
 * resource (`grant-roles.ts`).
 *
 * Effective role, highest wins: the direct grants that apply to the caller, then viewer for what
 * they see by inheritance (`visibility-sql.ts`: a marketplace's plugins, a plugin's or hub's
 * config objects, an assigned hub). Ids the caller cannot see are 404, exactly like ids that do not
 * exist.
 * @module
 */
import type { Kysely } from 'kysely'
import { newId } from '../../core/ids.ts'
import { insertRows } from '../../storage/row-inserts.ts'
import type { Actor } from '../admin/audit.ts'
import { recordAudit } from '../admin/audit.ts'
import { isUniqueViolation } from '../db-errors.ts'
import { isoAt, type Deps } from '../deps.ts'
import { keysetPage, type Page } from '../pagination.ts'
import type { ControlPlaneDb, Db } from '../schema.ts'
import { controlPlaneError } from '../control-plane-errors.ts'
import {
  atLeast,
  maxRole,
  notFound,
  RESOURCE_TABLES,
  isOrgAdmin,
  type GrantRole,
  type ResourceType,
} from './grant-roles.ts'
import { forEachPrincipal, visibleCondition } from './visibility-sql.ts'

/**
 * Grants of `type` that apply to the actor, one index range per principal
 * (`(org_id, resource_type, <principal>, …)`, see {@link forEachPrincipal}). `resourceId` narrows
 * every branch to one resource.
 */
function applyingGrants(db: Db, actor: Pick<Actor, 'orgId' | 'memberId'>, type: ResourceType, resourceId?: string) {
  return forEachPrincipal(db, actor, 'g', () => {
    let q = db
      .selectFrom('access_grant as g')
      .select(['g.resource_id', 'g.role'])
      .where('g.org_id', '=', actor.orgId)
      .where('g.resource_type', '=', type)
    if (resourceId !== undefined) q = q.where('g.resource_id', '=', resourceId)
    return q
  })
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
    const row = await trx
      .selectFrom('access_grant')
      .select('id')
      .where('id', '=', grantId)
      .where('resource_type', '=', type)
      .where('resource_id', '=', resourceId)
      .executeTakeFirst()
    if (!row) throw controlPlaneError('access_grant_not_found', 'Access grant not found')
    // Recorded while the grant still exists, so the delivery event can name who loses it.
    await recordAudit(deps, trx, actor, 'access.revoked', { type, id: resourceId }, { grantId })
    await trx.deleteFrom('access_grant').where('id', '=', grantId).execute()
  })
}

/** Deletes every grant on a resource (when the resource itself is deleted). */
export async function dropGrants(trx: Db, type: ResourceType, resourceId: string): Promise<void> {
  await trx.deleteFrom('access_grant').where('resource_type', '=', type).where('resource_id', '=', resourceId).execute()
}

/**
 * Organizations and the caller's memberships in them. Creating an organization makes its creator
 * the owner in the same transaction.
 * @module
 */
import { newId } from '../../core/ids.ts'
import { isoAt, type Deps } from '../deps.ts'
import { keysetPage, type Page } from '../pagination.ts'
import { asRole, type Role } from '../policy.ts'
import { recordAudit, type Actor } from './audit.ts'
import { controlPlaneError } from '../control-plane-errors.ts'

/** An organization as the API shows it. */
export interface OrganizationView {
  id: string
  name: string
  createdAt: string
  updatedAt: string
}

/** One of the caller's organizations, with their membership in it. */
export interface MyOrganizationView {
  id: string
  name: string
  memberId: string
  role: Role
  isActive: boolean
}

/** A membership found for (user, organization). */
export interface Membership {
  orgId: string
  orgName: string
  memberId: string
  role: Role
}

function view(row: { id: string; name: string; created_at: string; updated_at: string }): OrganizationView {
  return { id: row.id, name: row.name, createdAt: row.created_at, updatedAt: row.updated_at }
}

/** Creates an organization with `userId` as its owner. */
export async function createOrganization(
  deps: Deps,
  userId: string,
  input: { name: string },
): Promise<{ organization: OrganizationView; memberId: string }> {
  const now = isoAt(deps)
  const orgId = newId('org')
  const memberId = newId('mem')
  await deps.db.transaction().execute(async (trx) => {
    await trx
      .insertInto('organization')
      .values({ id: orgId, name: input.name, created_at: now, updated_at: now })
      .execute()
    await trx
      .insertInto('member')
      .values({ id: memberId, org_id: orgId, user_id: userId, role: 'owner', created_at: now, updated_at: now })
      .execute()
    await recordAudit(
      deps,
      trx,
      { orgId, userId, memberId, role: 'owner', credential: 'session', apiKeyId: null },
      'organization.created',
      { type: 'organization', id: orgId },
    )
  })
  return { organization: { id: orgId, name: input.name, createdAt: now, updatedAt: now }, memberId }
}

/** The organization by id (the caller's current one). */
export async function getOrganization(deps: Deps, orgId: string): Promise<OrganizationView> {
  const row = await deps.db.selectFrom('organization').selectAll().where('id', '=', orgId).executeTakeFirst()
  if (!row) throw controlPlaneError('organization_not_found', 'Organization not found')
  return view(row)
}

/** Renames the organization. */
export async function updateOrganization(
  deps: Deps,
  actor: Actor,
  input: { name?: string },
): Promise<OrganizationView> {
  // The answer is read inside the transaction: a read after the commit could fail and turn
  // a change that was made into an error.
  return deps.db.transaction().execute(async (trx) => {
    if (input.name !== undefined)
      await trx
        .updateTable('organization')
        .set({ name: input.name, updated_at: isoAt(deps) })
        .where('id', '=', actor.orgId)
        .execute()
    await recordAudit(
      deps,
      trx,
      actor,
      'organization.updated',
      { type: 'organization', id: actor.orgId },
      { fields: Object.keys(input).join(',') },
    )
    return getOrganization({ ...deps, db: trx }, actor.orgId)
  })
}

/** The user's membership in one organization, or null when not a member. */
export async function membershipOf(deps: Deps, userId: string, orgId: string): Promise<Membership | null> {
  const row = await deps.db
    .selectFrom('member as m')
    .innerJoin('organization as o', 'o.id', 'm.org_id')
    .select(['m.id', 'm.role', 'o.id as org_id', 'o.name'])
    .where('m.user_id', '=', userId)
    .where('m.org_id', '=', orgId)
    .executeTakeFirst()
  return row ? { orgId: row.org_id, orgName: row.name, memberId: row.id, role: asRole(row.role) } : null
}

/** The user's earliest membership, used when a session has no (valid) active organization. */
export async function firstMembership(deps: Deps, userId: string): Promise<Membership | null> {
  const row = await deps.db
    .selectFrom('member as m')
    .innerJoin('organization as o', 'o.id', 'm.org_id')
    .select(['m.id', 'm.role', 'o.id as org_id', 'o.name'])
    .where('m.user_id', '=', userId)
    .orderBy('m.id')
    .limit(1)
    .executeTakeFirst()
  return row ? { orgId: row.org_id, orgName: row.name, memberId: row.id, role: asRole(row.role) } : null
}

/** The user's organizations, paged in membership order; `onlyOrgId` narrows to one (API keys). */
export function listMyOrganizations(
  deps: Deps,
  userId: string,
  activeOrgId: string | null,
  page: { cursor?: string; limit: number; onlyOrgId?: string },
): Promise<Page<MyOrganizationView>> {
  let query = deps.db
    .selectFrom('member as m')
    .innerJoin('organization as o', 'o.id', 'm.org_id')
    .select(['m.id as member_id', 'm.role', 'o.id', 'o.name'])
    .where('m.user_id', '=', userId)
  if (page.onlyOrgId) query = query.where('m.org_id', '=', page.onlyOrgId)
  return keysetPage(query, {
    scope: 'my-orgs',
    cursor: page.cursor,
    limit: page.limit,
    order: [{ column: 'm.id', field: 'member_id', direction: 'asc' }],
    map: (row) => ({
      id: row.id,
      name: row.name,
      memberId: row.member_id,
      role: asRole(row.role),
      isActive: row.id === activeOrgId,
    }),
  })
}

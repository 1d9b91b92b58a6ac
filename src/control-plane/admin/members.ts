/**
 * Members of an organization: list, read, change role, remove. Every lookup is scoped by the
 * actor's organization, so an id from another organization is indistinguishable from a missing
 * one (404). The owner's membership is protected: ownership is not changed through these routes.
 * @module
 */
import type { MaybePromise } from '../../core/maybe-promise.ts'
import type { Kysely } from 'kysely'
import { isoAt, type Deps } from '../deps.ts'
import type { Page } from '../pagination.ts'
import { preparedPage } from '../prepared-page.ts'
import { asRole, type AssignableRole, type Role } from '../policy.ts'
import { disableMemberKeys } from './api-keys.ts'
import { revokeMemberOAuthTokens } from '../oauth/oauth-token-lists.ts'
import { recordAudit, type Actor } from './audit.ts'
import type { ControlPlaneDb, Db } from '../schema.ts'
import { controlPlaneError } from '../control-plane-errors.ts'

/** A member as the API shows it. */
export interface MemberView {
  id: string
  userId: string
  email: string
  name: string
  role: Role
  createdAt: string
  updatedAt: string
}

function memberQuery(db: Kysely<ControlPlaneDb>, orgId: string) {
  return db
    .selectFrom('member as m')
    .innerJoin('app_user as u', 'u.id', 'm.user_id')
    .select(['m.id', 'm.user_id', 'm.role', 'm.created_at', 'm.updated_at', 'u.email', 'u.name'])
    .where('m.org_id', '=', orgId)
}

type MemberRow = {
  id: string
  user_id: string
  role: string
  created_at: string
  updated_at: string
  email: string
  name: string
}

function view(row: MemberRow): MemberView {
  return {
    id: row.id,
    userId: row.user_id,
    email: row.email,
    name: row.name,
    role: asRole(row.role),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  }
}

function notFound() {
  return controlPlaneError('member_not_found', 'Member not found')
}

/** The members page, compiled once per shape (with or without a role filter). */
const memberPage = preparedPage({
  scope: 'members',
  order: [{ column: 'm.id', field: 'id', direction: 'asc' }],
  map: view,
  build: (db: Kysely<ControlPlaneDb>, _shape, [orgId, role]) => {
    const query = memberQuery(db, orgId as string)
    return role === undefined ? query : query.where('m.role', '=', role as Role)
  },
})

/** Members in joining order, optionally of one role. */
export function listMembers(
  deps: Deps,
  orgId: string,
  page: { cursor?: string; limit: number; role?: Role },
): MaybePromise<Page<MemberView>> {
  return memberPage(deps.db, '', [orgId, page.role || undefined], { cursor: page.cursor, limit: page.limit })
}

/** One member of the organization. */
export async function getMember(deps: Deps, orgId: string, memberId: string): Promise<MemberView> {
  const row = await memberQuery(deps.db, orgId).where('m.id', '=', memberId).executeTakeFirst()
  if (!row) throw notFound()
  return view(row)
}

/**
 * Changes a member's role. The owner's role cannot be changed (409 `owner_protected`); setting
 * the same role changes nothing. A real change disables the member's API keys.
 */
export async function changeMemberRole(
  deps: Deps,
  actor: Actor,
  memberId: string,
  role: AssignableRole,
): Promise<MemberView> {
  // The answer is read inside the transaction: a read after the commit could fail and turn
  // a change that was made into an error.
  return deps.db.transaction().execute(async (trx) => {
    const row = await trx
      .selectFrom('member')
      .select(['id', 'role'])
      .where('id', '=', memberId)
      .where('org_id', '=', actor.orgId)
      .executeTakeFirst()
    if (!row) throw notFound()
    if (row.role === 'owner') throw controlPlaneError('owner_protected', "The owner's role cannot be changed")
    if (row.role !== role) {
      await trx
        .updateTable('member')
        .set({ role, updated_at: isoAt(deps) })
        .where('id', '=', memberId)
        .execute()
      await recordAudit(
        deps,
        trx,
        actor,
        'member.role_changed',
        { type: 'member', id: memberId },
        { from: row.role, to: role },
      )
      await disableMemberKeys(deps, trx, actor, memberId, 'role_changed')
    }
    return getMember({ ...deps, db: trx }, actor.orgId, memberId)
  })
}

/**
 * Makes another member the owner; the previous owner becomes an admin. Both are role changes, so
 * both members' API keys are disabled. 409 `already_owner` when the target is the owner.
 */
export async function transferOwnership(deps: Deps, actor: Actor, memberId: string): Promise<MemberView> {
  // The answer is read inside the transaction: a read after the commit could fail and turn
  // a change that was made into an error.
  return deps.db.transaction().execute(async (trx) => {
    const row = await trx
      .selectFrom('member')
      .select(['id', 'role'])
      .where('id', '=', memberId)
      .where('org_id', '=', actor.orgId)
      .executeTakeFirst()
    if (!row) throw notFound()
    if (row.role === 'owner') throw controlPlaneError('already_owner', 'That member is already the owner')
    const now = isoAt(deps)
    await trx
      .updateTable('member')
      .set({ role: 'admin', updated_at: now })
      .where('org_id', '=', actor.orgId)
      .where('role', '=', 'owner')
      .execute()
    await trx.updateTable('member').set({ role: 'owner', updated_at: now }).where('id', '=', memberId).execute()
    await recordAudit(
      deps,
      trx,
      actor,
      'member.ownership_transferred',
      { type: 'member', id: memberId },
      { from: row.role, previousOwnerMemberId: actor.memberId },
    )
    await disableMemberKeys(deps, trx, actor, actor.memberId, 'role_changed')
    await disableMemberKeys(deps, trx, actor, memberId, 'role_changed')
    return getMember({ ...deps, db: trx }, actor.orgId, memberId)
  })
}

/**
 * Removes a member: their team memberships go, their API keys are disabled and their OAuth tokens
 * revoked, in the removal's transaction. The owner cannot be removed.
 */
export async function removeMember(deps: Deps, actor: Actor, memberId: string): Promise<void> {
  await deps.db.transaction().execute((trx) => removeMembership(deps, trx, actor, memberId))
}

/**
 * {@link removeMember} inside the caller's transaction (SCIM deprovisioning pairs it with its own
 * writes): 404 for another organization's member, 409 `owner_protected` for the owner.
 */
export async function removeMembership(deps: Deps, trx: Db, actor: Actor, memberId: string): Promise<void> {
  const row = await trx
    .selectFrom('member')
    .select(['id', 'role', 'user_id'])
    .where('id', '=', memberId)
    .where('org_id', '=', actor.orgId)
    .executeTakeFirst()
  if (!row) throw notFound()
  if (row.role === 'owner') throw controlPlaneError('owner_protected', 'The owner cannot be removed')
  await trx.deleteFrom('member').where('id', '=', memberId).execute()
  await trx
    .updateTable('user_session')
    .set({ active_org_id: null })
    .where('user_id', '=', row.user_id)
    .where('active_org_id', '=', actor.orgId)
    .execute()
  await recordAudit(deps, trx, actor, 'member.removed', { type: 'member', id: memberId }, { role: row.role })
  await disableMemberKeys(deps, trx, actor, memberId, 'member_removed')
  await revokeMemberOAuthTokens(deps, trx, actor, memberId)
}

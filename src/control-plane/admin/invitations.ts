/**
 * Invitations: an admin invites an email with a role and receives a one-time token to pass on;
 * the invited person accepts it with a session (or signs up with it). Tokens are stored hashed.
 * States: `pending → accepted | canceled`, and `expired` once a pending invitation passes its
 * expiry (derived at read time, so no sweeper is needed and the state can never be stale).
 * Inviting an email with a pending invitation replaces it: the old token stops working.
 * @module
 */
import { assertAdmitted, readAdmissionPolicy } from '../admission/admission-policy.ts'
import type { Transaction } from 'kysely'
import { newId } from '../../core/ids.ts'
import { generateToken, hashToken } from '../../core/secrets.ts'
import { isoAt, type Deps } from '../deps.ts'
import { normalizeEmail } from '../identity/users-view.ts'
import { keysetPage, type Page } from '../pagination.ts'
import { asRole, type AssignableRole, type Role } from '../policy.ts'
import type { ControlPlaneDb, InvitationTable } from '../schema.ts'
import { recordAudit, type Actor } from './audit.ts'
import { controlPlaneError } from '../control-plane-errors.ts'

/** Prefix of invitation tokens. */
export const INVITATION_TOKEN_PREFIX = 'svi_'

/** Invitation states as the API shows them. */
export const INVITATION_STATES = ['pending', 'accepted', 'canceled', 'expired'] as const
/** An invitation state. */
export type InvitationState = (typeof INVITATION_STATES)[number]

/** An invitation as the API shows it; never the token. */
export interface InvitationView {
  id: string
  email: string
  role: Role
  status: InvitationState
  invitedByMemberId: string | null
  acceptedByUserId: string | null
  createdAt: string
  expiresAt: string
  closedAt: string | null
}

function stateOf(deps: Deps, row: Pick<InvitationTable, 'status' | 'expires_at'>): InvitationState {
  if (row.status === 'pending' && Date.parse(row.expires_at) <= deps.now()) return 'expired'
  return row.status as InvitationState
}

function view(deps: Deps, row: InvitationTable): InvitationView {
  return {
    id: row.id,
    email: row.email,
    role: asRole(row.role),
    status: stateOf(deps, row),
    invitedByMemberId: row.invited_by_member_id,
    acceptedByUserId: row.accepted_by_user_id,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    closedAt: row.closed_at,
  }
}

const notFound = () => controlPlaneError('invitation_not_found', 'Invitation not found')

/** Creates an invitation and returns its token once. 409 `member_exists` when the email is already a member. */
export async function createInvitation(
  deps: Deps,
  actor: Actor,
  input: { email: string; role: AssignableRole },
): Promise<{ item: InvitationView; token: string }> {
  const email = normalizeEmail(input.email)
  const token = generateToken(INVITATION_TOKEN_PREFIX)
  const now = isoAt(deps)
  const row: InvitationTable = {
    id: newId('inv'),
    org_id: actor.orgId,
    email,
    role: input.role,
    token_hash: hashToken(token),
    status: 'pending',
    invited_by_member_id: actor.memberId,
    accepted_by_user_id: null,
    created_at: now,
    expires_at: isoAt(deps, deps.settings.invitationTtlMs),
    closed_at: null,
  }
  await deps.db.transaction().execute(async (trx) => {
    const existing = await trx
      .selectFrom('member as m')
      .innerJoin('app_user as u', 'u.id', 'm.user_id')
      .select('m.id')
      .where('m.org_id', '=', actor.orgId)
      .where('u.email', '=', email)
      .executeTakeFirst()
    if (existing) throw controlPlaneError('member_exists', 'That email already belongs to a member')
    // Refused now rather than when the person tries to accept.
    assertAdmitted(await readAdmissionPolicy(trx, actor.orgId), 'invitation', email)
    const replaced = await trx
      .updateTable('invitation')
      .set({ status: 'canceled', closed_at: now })
      .where('org_id', '=', actor.orgId)
      .where('email', '=', email)
      .where('status', '=', 'pending')
      .executeTakeFirst()
    await trx.insertInto('invitation').values(row).execute()
    await recordAudit(
      deps,
      trx,
      actor,
      'invitation.created',
      { type: 'invitation', id: row.id },
      { role: row.role, replacedPending: Number(replaced.numUpdatedRows) > 0 },
    )
  })
  return { item: view(deps, row), token }
}

/** Invitations, oldest first, optionally in one state (filtered in SQL, expiry included). */
export function listInvitations(
  deps: Deps,
  orgId: string,
  page: { cursor?: string; limit: number; status?: InvitationState },
): Promise<Page<InvitationView>> {
  let query = deps.db.selectFrom('invitation').selectAll().where('org_id', '=', orgId)
  const now = isoAt(deps)
  if (page.status === 'pending') query = query.where('status', '=', 'pending').where('expires_at', '>', now)
  else if (page.status === 'expired') query = query.where('status', '=', 'pending').where('expires_at', '<=', now)
  else if (page.status) query = query.where('status', '=', page.status)
  return keysetPage(query, {
    scope: 'invitations',
    cursor: page.cursor,
    limit: page.limit,
    order: [{ column: 'id', field: 'id', direction: 'asc' }],
    map: (row) => view(deps, row),
  })
}

/** One invitation of the organization. */
export async function getInvitation(deps: Deps, orgId: string, id: string): Promise<InvitationView> {
  const row = await deps.db
    .selectFrom('invitation')
    .selectAll()
    .where('id', '=', id)
    .where('org_id', '=', orgId)
    .executeTakeFirst()
  if (!row) throw notFound()
  return view(deps, row)
}

/** Cancels a pending invitation; 409 `invitation_not_pending` in any other state. */
export async function cancelInvitation(deps: Deps, actor: Actor, id: string): Promise<InvitationView> {
  // The answer is read inside the transaction: a read after the commit could fail and turn
  // a change that was made into an error.
  return deps.db.transaction().execute(async (trx) => {
    const row = await trx
      .selectFrom('invitation')
      .selectAll()
      .where('id', '=', id)
      .where('org_id', '=', actor.orgId)
      .executeTakeFirst()
    if (!row) throw notFound()
    const state = stateOf(deps, row)
    if (state !== 'pending')
      throw controlPlaneError('invitation_not_pending', `The invitation is ${state}`, { details: { status: state } })
    await trx
      .updateTable('invitation')
      .set({ status: 'canceled', closed_at: isoAt(deps) })
      .where('id', '=', id)
      .execute()
    await recordAudit(deps, trx, actor, 'invitation.canceled', { type: 'invitation', id })
    return getInvitation({ ...deps, db: trx }, actor.orgId, id)
  })
}

/** Why a token cannot be used. */
export type InvitationProblem = 'unknown' | 'not_pending' | 'expired' | 'email_mismatch'

/** Finds the invitation a token names, checking it is pending, unexpired and for `email`. */
export async function findUsableInvitation(
  deps: Deps,
  trx: Transaction<ControlPlaneDb>,
  token: string,
  email: string,
): Promise<InvitationTable | { problem: InvitationProblem; status?: InvitationState }> {
  if (!token.startsWith(INVITATION_TOKEN_PREFIX) || token.length > 256) return { problem: 'unknown' }
  const row = await trx
    .selectFrom('invitation')
    .selectAll()
    .where('token_hash', '=', hashToken(token))
    .executeTakeFirst()
  if (!row) return { problem: 'unknown' }
  const state = stateOf(deps, row)
  if (state === 'expired') return { problem: 'expired', status: state }
  if (state !== 'pending') return { problem: 'not_pending', status: state }
  if (row.email !== normalizeEmail(email)) return { problem: 'email_mismatch' }
  return row
}

/**
 * Turns a usable invitation into a membership for `userId` inside the caller's transaction:
 * creates the member, marks the invitation accepted and audits as the new member.
 */
export async function acceptInto(
  deps: Deps,
  trx: Transaction<ControlPlaneDb>,
  invitation: InvitationTable,
  userId: string,
): Promise<{ orgId: string; memberId: string; role: Role }> {
  const already = await trx
    .selectFrom('member')
    .select('id')
    .where('org_id', '=', invitation.org_id)
    .where('user_id', '=', userId)
    .executeTakeFirst()
  if (already) throw controlPlaneError('member_exists', 'You are already a member of this organization')
  assertAdmitted(await readAdmissionPolicy(trx, invitation.org_id), 'invitation', invitation.email)
  const now = isoAt(deps)
  const memberId = newId('mem')
  const role = asRole(invitation.role)
  await trx
    .insertInto('member')
    .values({ id: memberId, org_id: invitation.org_id, user_id: userId, role, created_at: now, updated_at: now })
    .execute()
  await trx
    .updateTable('invitation')
    .set({ status: 'accepted', accepted_by_user_id: userId, closed_at: now })
    .where('id', '=', invitation.id)
    .execute()
  const actor: Actor = { orgId: invitation.org_id, userId, memberId, role, credential: 'session', apiKeyId: null }
  await recordAudit(deps, trx, actor, 'invitation.accepted', { type: 'invitation', id: invitation.id })
  await recordAudit(deps, trx, actor, 'member.joined', { type: 'member', id: memberId }, { role })
  return { orgId: invitation.org_id, memberId, role }
}

/** Maps a token problem to the API error for accepting with a session. */
export function invitationProblemError(problem: { problem: InvitationProblem; status?: InvitationState }) {
  switch (problem.problem) {
    case 'unknown':
      return notFound()
    case 'email_mismatch':
      return controlPlaneError('invitation_email_mismatch', 'This invitation was sent to a different email address')
    default:
      return controlPlaneError('invitation_not_pending', `The invitation is ${problem.status}`, {
        details: {
          status: problem.status,
        },
      })
  }
}

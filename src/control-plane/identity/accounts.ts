/**
 * Sign-up, sign-in and invitation acceptance: the flows that create sessions or memberships for
 * a person. Sign-up is open for the very first account of an empty database (so the installer can
 * bootstrap), then needs a pending invitation for that email unless the configuration allows open
 * sign-up. Whether sign-up is allowed is decided before whether the email is taken, so refusals
 * do not reveal accounts. Password hashing happens after those checks and outside transactions
 * so slow KDF work never holds the database.
 * @module
 */
import { noteAuditActor } from '../audit/request-audit.ts'
import type { Transaction } from 'kysely'
import { ApiError, errors } from '../../core/errors.ts'
import { newId } from '../../core/ids.ts'
import { isUniqueViolation } from '../db-errors.ts'
import { isoAt, type Deps } from '../deps.ts'
import { acceptInto, findUsableInvitation, invitationProblemError } from '../admin/invitations.ts'
import type { Role } from '../policy.ts'
import type { ControlPlaneDb, InvitationTable } from '../schema.ts'
import { burnPasswordCheck, hashPassword, verifyPassword } from './passwords.ts'
import { createSession, setActiveOrg, type ActiveSession, type IssuedSession } from './sessions.ts'
import type { SignInThrottle } from './sign-in-throttle.ts'
import { normalizeEmail, toUserView, type UserView } from './users-view.ts'
import { controlPlaneError } from '../control-plane-errors.ts'

/** What sign-up and sign-in return. */
export interface SignedIn {
  user: UserView
  session: IssuedSession
}

/** Per-address throttling for sign-up: the sign-in throttle and the caller's address. */
export interface SignUpGuard {
  throttle: SignInThrottle
  address: string | null
}

/**
 * Creates an account and signs it in; with an invitation token, also joins that organization.
 *
 * Order matters for what a refused caller can learn: whether sign-up is allowed for this email
 * (first account, open sign-up, or a usable invitation for it) is decided before whether the
 * email has an account, so closed sign-up answers the same 403 `sign_up_not_allowed` for every
 * email. Only a caller allowed to sign up with the email hears 409 `email_taken`. The password is
 * hashed only after these checks pass. With a `guard`, refusals (403, 409) count as failures in
 * the sign-in throttle for the email and the address, and a throttled caller gets 429.
 */
export async function signUp(
  deps: Deps,
  input: { email: string; password: string; name: string; invitationToken?: string },
  guard?: SignUpGuard,
): Promise<SignedIn> {
  const email = normalizeEmail(input.email)
  const address = guard?.address ?? null
  const wait = guard ? await guard.throttle.retryAfterSeconds(email, address) : 0
  if (wait > 0) throw errors.tooManyRequests(wait, 'Too many refused attempts; try again later')
  try {
    const signedIn = await createAccount(deps, { ...input, email })
    await guard?.throttle.recordSuccess(email)
    return signedIn
  } catch (error) {
    // Two sign-ups for one email racing past the existence check: the constraint decides.
    const refusal = isUniqueViolation(error)
      ? controlPlaneError('email_taken', 'An account with that email already exists')
      : error
    if (refusal instanceof ApiError && (refusal.code === 'sign_up_not_allowed' || refusal.code === 'email_taken'))
      await guard?.throttle.recordFailure(email, address)
    throw refusal
  }
}

/**
 * Throws unless this email may sign up now: 403 `sign_up_not_allowed` when it may not, then 409
 * `email_taken` when it may but already has an account. Returns the invitation to accept, if any.
 */
async function admit(
  deps: Deps,
  trx: Transaction<ControlPlaneDb>,
  email: string,
  invitationToken: string | undefined,
): Promise<InvitationTable | null> {
  let invitation: InvitationTable | null = null
  if (invitationToken !== undefined) {
    const found = await findUsableInvitation(deps, trx, invitationToken, email)
    if ('problem' in found)
      throw controlPlaneError('sign_up_not_allowed', 'The invitation token is not usable for this email', {
        details: { reason: found.problem },
      })
    invitation = found
  } else if (!deps.settings.openSignUp) {
    const anyone = await trx.selectFrom('app_user').select('id').limit(1).executeTakeFirst()
    if (anyone)
      throw controlPlaneError('sign_up_not_allowed', 'Sign-up needs an invitation token', {
        details: { reason: 'invitation_required' },
      })
  }
  const taken = await trx.selectFrom('app_user').select('id').where('email', '=', email).executeTakeFirst()
  if (taken) throw controlPlaneError('email_taken', 'An account with that email already exists')
  return invitation
}

async function createAccount(
  deps: Deps,
  input: { email: string; password: string; name: string; invitationToken?: string },
): Promise<SignedIn> {
  const { email } = input
  // Cheap checks before the slow hash, so refused attempts cost no KDF work.
  await deps.db.transaction().execute((trx) => admit(deps, trx, email, input.invitationToken))
  const passwordHash = await hashPassword(input.password, deps.settings.scrypt)
  const now = isoAt(deps)
  const userId = newId('usr')
  return deps.db.transaction().execute(async (trx) => {
    // Decided again: an invitation or the first-account slot may have gone while hashing.
    const invitation = await admit(deps, trx, email, input.invitationToken)
    await trx
      .insertInto('app_user')
      .values({ id: userId, email, name: input.name, password_hash: passwordHash, created_at: now, updated_at: now })
      .execute()
    const joined = invitation ? await acceptInto(deps, trx, invitation, userId) : null
    noteAuditActor({ userId, orgId: joined?.orgId ?? null, memberId: joined?.memberId ?? null })
    const session = await createSession(deps, trx, userId, joined?.orgId ?? null)
    return { user: { id: userId, email, name: input.name, createdAt: now }, session }
  })
}

/** Verifies a password and issues a session; throttled per account and address. */
export async function signIn(
  deps: Deps,
  throttle: SignInThrottle,
  input: { email: string; password: string; address: string | null },
): Promise<SignedIn> {
  const email = normalizeEmail(input.email)
  const wait = await throttle.retryAfterSeconds(email, input.address)
  if (wait > 0) throw errors.tooManyRequests(wait, 'Too many failed sign-in attempts; try again later')
  const row = await deps.db.selectFrom('app_user').selectAll().where('email', '=', email).executeTakeFirst()
  // The audit log names the account a refused attempt was for; the caller is told nothing more.
  if (row) noteAuditActor({ userId: row.id })
  let ok = false
  // An account that signs in only with SSO has no password hash: it costs the same as an unknown one.
  if (row?.password_hash.startsWith('scrypt$')) ok = await verifyPassword(input.password, row.password_hash)
  else await burnPasswordCheck(input.password, deps.settings.scrypt)
  if (!row || !ok) {
    await throttle.recordFailure(email, input.address)
    throw errors.unauthorized('Email or password is wrong')
  }
  await throttle.recordSuccess(email)
  await refuseWhenOnlySso(deps, row.id)
  const session = await createSession(deps, deps.db, row.id, null)
  return { user: toUserView(row), session }
}

/**
 * A password is no way into an organization that requires its provider: when every organization
 * the account belongs to does, password sign-in is 403 `sso_required` (after the password checked
 * out, so the refusal reveals nothing to someone without it). With any other membership, or none,
 * the session is issued and refused only in those organizations.
 */
async function refuseWhenOnlySso(deps: Deps, userId: string): Promise<void> {
  const rows = await deps.db
    .selectFrom('member as m')
    .leftJoin('org_admission_policy as p', 'p.org_id', 'm.org_id')
    .select(['m.org_id', 'p.require_sso'])
    .where('m.user_id', '=', userId)
    .execute()
  if (rows.length > 0 && rows.every((r) => Number(r.require_sso ?? 0) === 1))
    throw controlPlaneError('sso_required', 'Your organization requires signing in with its identity provider', {
      details: { rule: 'requireSso', orgId: rows[0]!.org_id },
    })
}

/** Accepts an invitation for the signed-in person and makes its organization their active one. */
export async function acceptInvitation(
  deps: Deps,
  session: ActiveSession,
  token: string,
): Promise<{ organization: { id: string; name: string }; memberId: string; role: Role }> {
  return deps.db.transaction().execute(async (trx) => {
    const found = await findUsableInvitation(deps, trx, token, session.user.email)
    if ('problem' in found) throw invitationProblemError(found)
    const joined = await acceptInto(deps, trx, found, session.user.id)
    await setActiveOrg(trx, session.id, joined.orgId)
    const org = await trx
      .selectFrom('organization')
      .select(['id', 'name'])
      .where('id', '=', joined.orgId)
      .executeTakeFirstOrThrow()
    return { organization: org, memberId: joined.memberId, role: joined.role }
  })
}

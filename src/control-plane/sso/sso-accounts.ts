/**
 * Which account a verified ID token signs in, and its membership: accounts are found by (issuer,
 * subject), never by email alone; new people from the connection's domains get an account (with no
 * password) and, when the admission policy allows SSO just-in-time, a membership with the
 * connection's default role and team. Runs inside the callback's transaction.
 * @module
 */
import { newId } from '../../core/ids.ts'
import { assertAdmitted, emailDomain, readAdmissionPolicy } from '../admission/admission-policy.ts'
import type { Actor } from '../actor.ts'
import { recordAudit } from '../admin/audit.ts'
import { controlPlaneError } from '../control-plane-errors.ts'
import { isoAt, type Deps } from '../deps.ts'
import { asRole } from '../policy.ts'
import type { Db } from '../schema.ts'
import type { IdTokenClaims } from './id-token.ts'
import type { SsoConnectionTable } from './sso-tables.ts'

/**
 * The stored password hash of an account that has no password: made by SSO, or provisioned by the
 * organization (SCIM) and not signed in yet. No password verifies against it.
 */
export const NO_PASSWORD = '!sso-only'

/**
 * The account for the verified claims and its membership, made when it is not one yet
 * (just-in-time, within the connection's domains and the admission policy). Runs in one transaction.
 */
export async function admitPerson(
  deps: Deps,
  trx: Db,
  connection: SsoConnectionTable,
  claims: IdTokenClaims,
  linkUserId: string | null,
): Promise<{ userId: string; memberId: string }> {
  const now = isoAt(deps)
  const identity = await trx
    .selectFrom('sso_identity')
    .selectAll()
    .where('issuer', '=', claims.iss)
    .where('subject', '=', claims.sub)
    .executeTakeFirst()
  let userId: string
  if (linkUserId !== null) {
    const other = await trx
      .selectFrom('sso_identity')
      .select('subject')
      .where('user_id', '=', linkUserId)
      .where('issuer', '=', claims.iss)
      .executeTakeFirst()
    if ((identity && identity.user_id !== linkUserId) || (other && other.subject !== claims.sub))
      throw controlPlaneError('sso_identity_conflict', 'That provider account is linked to another account here')
    if (!identity) await insertIdentity(trx, claims, linkUserId, now)
    userId = linkUserId
  } else if (identity) {
    userId = identity.user_id
  } else {
    const email = usableEmail(connection, claims)
    const taken = await trx
      .selectFrom('app_user')
      .select(['id', 'password_hash'])
      .where('email', '=', email)
      .executeTakeFirst()
    if (taken) {
      if (!(await provisionedHere(trx, connection, taken, claims.iss)))
        throw controlPlaneError(
          'sso_account_exists',
          'An account with this email exists: sign in with your password and link it to the provider from the console',
        )
      // Already a member here (provisionedHere checked), so the lookup below finds the membership.
      userId = taken.id
    } else {
      assertAdmitted(await readAdmissionPolicy(trx, connection.org_id), 'ssoJustInTime', email)
      userId = newId('usr')
      await trx
        .insertInto('app_user')
        .values({
          id: userId,
          email,
          name: claims.name ?? email.split('@')[0]!,
          password_hash: NO_PASSWORD,
          created_at: now,
          updated_at: now,
        })
        .execute()
    }
    await insertIdentity(trx, claims, userId, now)
  }
  if (identity)
    await trx.updateTable('sso_identity').set({ last_sign_in_at: now }).where('id', '=', identity.id).execute()
  const member = await trx
    .selectFrom('member')
    .select('id')
    .where('org_id', '=', connection.org_id)
    .where('user_id', '=', userId)
    .executeTakeFirst()
  return { userId, memberId: member?.id ?? (await joinJustInTime(deps, trx, connection, claims, userId)) }
}

/**
 * True for an account this organization provisioned (SCIM) and nobody ever signed in to: no
 * password, already a member here, no subject of this issuer yet. Only such an account is linked
 * on its first SSO sign-in by its verified email, which is in a domain this organization alone
 * claims (`usableEmail` has checked both); one with a password, or with another subject of this
 * issuer, is never taken over this way.
 */
async function provisionedHere(
  trx: Db,
  connection: SsoConnectionTable,
  account: { id: string; password_hash: string },
  issuer: string,
): Promise<boolean> {
  // No usable password: SCIM's and SSO's markers alike (only `scrypt$…` hashes verify).
  if (account.password_hash.startsWith('scrypt$')) return false
  const member = await trx
    .selectFrom('member')
    .select('id')
    .where('org_id', '=', connection.org_id)
    .where('user_id', '=', account.id)
    .executeTakeFirst()
  if (!member) return false
  const other = await trx
    .selectFrom('sso_identity')
    .select('id')
    .where('user_id', '=', account.id)
    .where('issuer', '=', issuer)
    .executeTakeFirst()
  return !other
}

/** The token's email when it may join by this connection; 403 `sso_domain_not_allowed` otherwise. */
function usableEmail(connection: SsoConnectionTable, claims: IdTokenClaims): string {
  const domains = JSON.parse(connection.allowed_domains) as string[]
  if (!claims.email || claims.emailVerified === false || !domains.includes(emailDomain(claims.email)))
    throw controlPlaneError(
      'sso_domain_not_allowed',
      "Your email is not in a domain this organization's single sign-on admits",
      {
        details: {
          reason: !claims.email ? 'no_email' : claims.emailVerified === false ? 'email_unverified' : 'domain',
        },
      },
    )
  return claims.email
}

async function insertIdentity(trx: Db, claims: IdTokenClaims, userId: string, now: string): Promise<void> {
  await trx
    .insertInto('sso_identity')
    .values({
      id: newId('sid'),
      issuer: claims.iss,
      subject: claims.sub,
      user_id: userId,
      created_at: now,
      last_sign_in_at: now,
    })
    .execute()
}

/** Makes the account a member with the connection's default role and team, audited as the new member. */
async function joinJustInTime(
  deps: Deps,
  trx: Db,
  connection: SsoConnectionTable,
  claims: IdTokenClaims,
  userId: string,
): Promise<string> {
  const email = usableEmail(connection, claims)
  assertAdmitted(await readAdmissionPolicy(trx, connection.org_id), 'ssoJustInTime', email)
  const now = isoAt(deps)
  const memberId = newId('mem')
  const role = asRole(connection.default_role)
  await trx
    .insertInto('member')
    .values({ id: memberId, org_id: connection.org_id, user_id: userId, role, created_at: now, updated_at: now })
    .execute()
  const actor: Actor = { orgId: connection.org_id, userId, memberId, role, credential: 'session', apiKeyId: null }
  await recordAudit(deps, trx, actor, 'member.joined', { type: 'member', id: memberId }, { role, via: 'sso' })
  if (connection.default_team_id) {
    const team = await trx
      .selectFrom('team')
      .select('id')
      .where('id', '=', connection.default_team_id)
      .where('org_id', '=', connection.org_id)
      .executeTakeFirst()
    if (team) {
      await trx.insertInto('team_member').values({ team_id: team.id, member_id: memberId, created_at: now }).execute()
      await recordAudit(deps, trx, actor, 'team.member_added', { type: 'team', id: team.id }, { memberId })
    }
  }
  return memberId
}

/**
 * Capability URLs: stock OpenCode reads `skills.urls` without credentials, so the member's skills
 * are served under `/d/<secret>/` — a 256-bit secret per member and credential (OAuth grant, API
 * key or session). The same URL is handed out for as long as the credential lives (the secret is
 * sealed at rest, found by its hash), so OpenCode's skill cache stays valid across starts; it
 * stops answering (404) once the credential is revoked or expired or the member is removed.
 * @module
 */
import { newId } from '../../core/ids.ts'
import { generateToken, hashToken, secretsEqual } from '../../core/secrets.ts'
import { isUniqueViolation } from '../db-errors.ts'
import { isoAt, type Deps } from '../deps.ts'
import type { DeliveryPrincipal } from './delivered-set.ts'

/** The credential a capability lives with. */
export interface CapabilityCredential {
  kind: 'oauth' | 'apiKey' | 'session'
  id: string
}

/** True while an OAuth grant is active and belongs to that user in that organization. */
export type OAuthGrantCheck = (
  deps: Deps,
  grantId: string,
  owner: { userId: string; orgId: string },
) => Promise<boolean>

/** The prefix of capability secrets (so they are recognizable in logs and scanners). */
export const CAPABILITY_PREFIX = 'dcap_'

/**
 * The member's capability secret for this credential: the existing one, or a new one. Two
 * instances creating it at once agree on the first row written.
 */
export async function capabilityFor(
  deps: Deps,
  member: Extract<DeliveryPrincipal, { kind: 'member' }>,
  credential: CapabilityCredential,
): Promise<string> {
  const existing = await findFor(deps, member.memberId, credential)
  if (existing) return existing
  const id = newId('dcap')
  const secret = generateToken(CAPABILITY_PREFIX)
  try {
    await deps.db
      .insertInto('delivery_capability')
      .values({
        id,
        org_id: member.orgId,
        member_id: member.memberId,
        credential_kind: credential.kind,
        credential_id: credential.id,
        secret_sealed: deps.secrets.seal(secret, id),
        secret_hash: hashToken(secret),
        created_at: isoAt(deps),
      })
      .execute()
    return secret
  } catch (error) {
    if (!isUniqueViolation(error)) throw error
    const raced = await findFor(deps, member.memberId, credential)
    if (!raced) throw error
    return raced
  }
}

async function findFor(deps: Deps, memberId: string, credential: CapabilityCredential): Promise<string | null> {
  const row = await deps.db
    .selectFrom('delivery_capability')
    .select(['id', 'secret_sealed'])
    .where('credential_kind', '=', credential.kind)
    .where('credential_id', '=', credential.id)
    .where('member_id', '=', memberId)
    .executeTakeFirst()
  return row ? deps.secrets.open(row.secret_sealed, row.id) : null
}

/**
 * The member a capability secret delivers to, while its credential is live and the member is
 * still in the organization; null otherwise (a dead capability row is removed on the way).
 */
export async function resolveCapability(
  deps: Deps,
  secret: string,
  oauthActive: OAuthGrantCheck | null,
): Promise<{ capabilityId: string; member: Extract<DeliveryPrincipal, { kind: 'member' }> } | null> {
  if (!secret.startsWith(CAPABILITY_PREFIX)) return null
  const hash = hashToken(secret)
  const row = await deps.db
    .selectFrom('delivery_capability as c')
    .innerJoin('member as m', 'm.id', 'c.member_id')
    .innerJoin('organization as o', 'o.id', 'c.org_id')
    .select(['c.id', 'c.secret_hash', 'c.credential_kind', 'c.credential_id', 'c.member_id', 'c.org_id'])
    .select(['m.user_id', 'm.org_id as member_org_id', 'o.name as org_name'])
    .where('c.secret_hash', '=', hash)
    .executeTakeFirst()
  if (!row || !secretsEqual(row.secret_hash, hash) || row.member_org_id !== row.org_id) return null
  const live = await credentialLive(deps, row, oauthActive)
  if (!live) {
    await deps.db.deleteFrom('delivery_capability').where('id', '=', row.id).execute()
    return null
  }
  return {
    capabilityId: row.id,
    member: { kind: 'member', orgId: row.org_id, orgName: row.org_name, userId: row.user_id, memberId: row.member_id },
  }
}

async function credentialLive(
  deps: Deps,
  row: { credential_kind: string; credential_id: string; member_id: string; user_id: string; org_id: string },
  oauthActive: OAuthGrantCheck | null,
): Promise<boolean> {
  const now = isoAt(deps)
  switch (row.credential_kind) {
    case 'apiKey': {
      const key = await deps.db
        .selectFrom('api_key')
        .select(['member_id', 'disabled_at', 'expires_at'])
        .where('id', '=', row.credential_id)
        .executeTakeFirst()
      return (
        !!key &&
        key.member_id === row.member_id &&
        key.disabled_at === null &&
        (!key.expires_at || key.expires_at > now)
      )
    }
    case 'session': {
      const session = await deps.db
        .selectFrom('user_session')
        .select(['user_id', 'expires_at'])
        .where('id', '=', row.credential_id)
        .executeTakeFirst()
      return !!session && session.user_id === row.user_id && session.expires_at > now
    }
    case 'oauth':
      return oauthActive ? oauthActive(deps, row.credential_id, { userId: row.user_id, orgId: row.org_id }) : false
    default:
      return false
  }
}

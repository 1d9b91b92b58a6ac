/**
 * The token store. A grant is one approval; under it live one access token (`oat_`) and one
 * refresh token (`ort_`) at a time, both stored as SHA-256 only and shown once. Refreshing rotates
 * both: the exchanged refresh token is kept, ended, so presenting it again is recognised as reuse
 * (a stolen copy, or a client that lost the race) and revokes the whole grant (OAuth 2.1 §4.3.1).
 * A token acts as its member with the member's current role, narrowed by its scopes, in the one
 * organization chosen at approval; it stops working when the grant is revoked, expires, or the
 * member leaves (the grant is revoked in the removal's own transaction).
 * @module
 */
import type { Kysely } from 'kysely'
import { newId } from '../../core/ids.ts'
import { generateToken, hashToken } from '../../core/secrets.ts'
import { recordAudit, type Actor } from '../admin/audit.ts'
import { isoAt, type Deps } from '../deps.ts'
import { asRole, type Role } from '../policy.ts'
import { preparedQuery } from '../prepared-query.ts'
import type { ControlPlaneDb, Db } from '../schema.ts'
import { tokenLifetimes, type OAuthClient } from './oauth-clients.ts'
import { oauthError } from './oauth-error.ts'
import { formatScopes, storedScopes, type OAuthScope } from './oauth-scopes.ts'
import type { OAuthGrantTable } from './oauth-tables.ts'

/** Access tokens start with this. */
export const ACCESS_TOKEN_PREFIX = 'oat_'
/** Refresh tokens start with this. */
export const REFRESH_TOKEN_PREFIX = 'ort_'
/** `last_used_at` is written at most this often per grant, so reads do not become writes. */
const LAST_USED_RESOLUTION_MS = 60_000

/** Why a grant ended. */
export type RevokedReason = 'member' | 'admin' | 'member_removed' | 'refresh_reuse' | 'code_reuse' | 'client'

/** The token response of `/oauth/token` (RFC 6749 §5.1 plus the organization the token acts in). */
export interface TokenResponse {
  access_token: string
  token_type: 'Bearer'
  expires_in: number
  refresh_token: string
  scope: string
  organization: { id: string; name: string }
}

/** What a valid access token authenticates as. */
export interface ResolvedOAuthToken {
  grantId: string
  clientId: string
  scopes: OAuthScope[]
  resource: string | null
  expiresAt: string
  orgId: string
  orgName: string
  memberId: string
  role: Role
  user: { id: string; email: string; name: string; created_at: string }
}

/** What {@link findActiveOAuthToken} answers. */
export interface ActiveOAuthToken {
  id: string
  userId: string
  orgId: string
  clientId: string
  scopes: OAuthScope[]
  expiresAt: string
}

/** Who a new grant is for. */
export interface GrantSubject {
  orgId: string
  orgName: string
  memberId: string
  userId: string
  role: Role
}

/** The audit actor of something done by or to a grant's member through the token itself. */
export function grantActor(subject: { orgId: string; userId: string; memberId: string; role: Role }): Actor {
  return { ...subject, credential: 'oauth', apiKeyId: null }
}

/** Inserts a fresh access and refresh token under a grant; returns them in plaintext (shown once). */
async function mintTokens(
  deps: Deps,
  db: Db,
  grantId: string,
  lifetimes: { accessMs: number; refreshMs: number },
): Promise<{ access: string; refresh: string }> {
  const access = generateToken(ACCESS_TOKEN_PREFIX)
  const refresh = generateToken(REFRESH_TOKEN_PREFIX)
  const now = isoAt(deps)
  await db
    .insertInto('oauth_token')
    .values([
      {
        id: newId('otk', deps.now()),
        grant_id: grantId,
        kind: 'access',
        token_hash: hashToken(access),
        created_at: now,
        expires_at: isoAt(deps, lifetimes.accessMs),
        ended_at: null,
      },
      {
        id: newId('otk', deps.now()),
        grant_id: grantId,
        kind: 'refresh',
        token_hash: hashToken(refresh),
        created_at: now,
        expires_at: isoAt(deps, lifetimes.refreshMs),
        ended_at: null,
      },
    ])
    .execute()
  return { access, refresh }
}

/**
 * Creates a grant with its first tokens for `subject`, inside the caller's transaction (the one
 * that consumes the device request or authorization code, so a code yields tokens exactly once).
 */
export async function issueGrant(
  deps: Deps,
  trx: Db,
  subject: GrantSubject,
  client: OAuthClient,
  scopes: readonly OAuthScope[],
  resource: string | null,
): Promise<{ grantId: string; response: TokenResponse }> {
  const lifetimes = tokenLifetimes(deps, client)
  const grant: OAuthGrantTable = {
    id: newId('ogr', deps.now()),
    org_id: subject.orgId,
    member_id: subject.memberId,
    user_id: subject.userId,
    client_id: client.id,
    client_name: client.name,
    scope: formatScopes(scopes),
    resource,
    created_at: isoAt(deps),
    expires_at: isoAt(deps, lifetimes.refreshMs),
    last_used_at: null,
    revoked_at: null,
    revoked_reason: null,
  }
  await trx.insertInto('oauth_grant').values(grant).execute()
  const tokens = await mintTokens(deps, trx, grant.id, lifetimes)
  await recordAudit(
    deps,
    trx,
    grantActor(subject),
    'oauth_token.issued',
    { type: 'oauth_token', id: grant.id },
    { clientId: client.id, scope: grant.scope, resource: resource ?? null },
  )
  return {
    grantId: grant.id,
    response: {
      access_token: tokens.access,
      token_type: 'Bearer',
      expires_in: Math.floor(lifetimes.accessMs / 1000),
      refresh_token: tokens.refresh,
      scope: grant.scope,
      organization: { id: subject.orgId, name: subject.orgName },
    },
  }
}

const tokenLookup = preparedQuery((db: Kysely<ControlPlaneDb>, tokenHash: string, kind: string) =>
  db
    .selectFrom('oauth_token as t')
    .innerJoin('oauth_grant as g', 'g.id', 't.grant_id')
    .innerJoin('organization as o', 'o.id', 'g.org_id')
    .innerJoin('app_user as u', 'u.id', 'g.user_id')
    // The membership must still exist: removal revokes the grant too, this is the second lock.
    .leftJoin('member as m', (join) => join.onRef('m.id', '=', 'g.member_id').onRef('m.org_id', '=', 'g.org_id'))
    .select([
      't.id as token_id',
      't.expires_at as token_expires_at',
      't.ended_at',
      'g.id as grant_id',
      'g.org_id',
      'g.member_id',
      'g.client_id',
      'g.scope',
      'g.resource',
      'g.expires_at as grant_expires_at',
      'g.last_used_at',
      'g.revoked_at',
      'o.name as org_name',
      'm.role',
      'u.id as user_id',
      'u.email',
      'u.name',
      'u.created_at',
    ])
    .where('t.token_hash', '=', tokenHash)
    .where('t.kind', '=', kind),
)

/** Resolves a presented access token, or why it is not usable. */
export async function resolveOAuthToken(
  deps: Deps,
  token: string,
): Promise<ResolvedOAuthToken | { rejected: 'unknown' | 'expired' | 'revoked' }> {
  if (!token.startsWith(ACCESS_TOKEN_PREFIX) || token.length > 256) return { rejected: 'unknown' }
  const [row] = await tokenLookup(deps.db, hashToken(token), 'access')
  if (!row) return { rejected: 'unknown' }
  const now = deps.now()
  if (row.revoked_at || row.ended_at || row.role === null) return { rejected: 'revoked' }
  if (Date.parse(row.token_expires_at) <= now) return { rejected: 'expired' }
  if (!row.last_used_at || now - Date.parse(row.last_used_at) >= LAST_USED_RESOLUTION_MS) {
    await deps.db
      .updateTable('oauth_grant')
      .set({ last_used_at: isoAt(deps) })
      .where('id', '=', row.grant_id)
      .execute()
  }
  return {
    grantId: row.grant_id,
    clientId: row.client_id,
    scopes: storedScopes(row.scope),
    resource: row.resource,
    expiresAt: row.token_expires_at,
    orgId: row.org_id,
    orgName: row.org_name,
    memberId: row.member_id,
    role: asRole(row.role),
    user: { id: row.user_id, email: row.email, name: row.name, created_at: row.created_at },
  }
}

/**
 * A grant that still works: not revoked, not past its expiry, its member still in the
 * organization. `id` is the grant id, which stays the same across refreshes (a principal's
 * `oauth.tokenId`), so what is bound to it (capability URLs) survives rotation and ends with it.
 */
export async function findActiveOAuthToken(deps: Deps, tokenId: string): Promise<ActiveOAuthToken | null> {
  const row = await deps.db
    .selectFrom('oauth_grant as g')
    .innerJoin('member as m', (join) => join.onRef('m.id', '=', 'g.member_id').onRef('m.org_id', '=', 'g.org_id'))
    .select(['g.id', 'g.user_id', 'g.org_id', 'g.client_id', 'g.scope', 'g.expires_at', 'g.revoked_at'])
    .where('g.id', '=', tokenId)
    .executeTakeFirst()
  if (!row || row.revoked_at || Date.parse(row.expires_at) <= deps.now()) return null
  return {
    id: row.id,
    userId: row.user_id,
    orgId: row.org_id,
    clientId: row.client_id,
    scopes: storedScopes(row.scope),
    expiresAt: row.expires_at,
  }
}

/**
 * Marks a grant revoked and deletes its tokens (the grant row keeps the story for lists and the
 * audit); true when it was active. Call inside a transaction.
 */
export async function endGrant(deps: Deps, trx: Db, grantId: string, reason: RevokedReason): Promise<boolean> {
  const now = isoAt(deps)
  const updated = await trx
    .updateTable('oauth_grant')
    .set({ revoked_at: now, revoked_reason: reason })
    .where('id', '=', grantId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst()
  if (Number(updated.numUpdatedRows) === 0) return false
  await trx.deleteFrom('oauth_token').where('grant_id', '=', grantId).execute()
  return true
}

/**
 * The refresh grant (RFC 6749 §6) with rotation. A refresh token presented a second time revokes
 * its grant (reuse detection); `scope` may only narrow what the grant holds.
 */
export async function refreshTokens(
  deps: Deps,
  client: OAuthClient,
  refreshToken: string,
  scopes: readonly OAuthScope[] | null,
): Promise<TokenResponse> {
  const invalid = () => oauthError('invalid_grant', 'The refresh token is invalid, expired or revoked')
  if (!refreshToken.startsWith(REFRESH_TOKEN_PREFIX) || refreshToken.length > 256) throw invalid()
  const [row] = await tokenLookup(deps.db, hashToken(refreshToken), 'refresh')
  if (!row || row.client_id !== client.id) throw invalid()
  const subject = {
    orgId: row.org_id,
    orgName: row.org_name,
    userId: row.user_id,
    memberId: row.member_id,
    role: asRole(row.role ?? 'member'),
  }
  if (row.ended_at && !row.revoked_at) {
    await revokeForReuse(deps, row.grant_id, subject)
    throw invalid()
  }
  if (row.revoked_at || row.role === null || Date.parse(row.token_expires_at) <= deps.now()) throw invalid()
  const held = storedScopes(row.scope)
  if (scopes && !scopes.every((scope) => held.includes(scope)))
    throw oauthError('invalid_scope', 'A refresh may only narrow the scopes the grant holds')
  const granted = scopes && scopes.length > 0 ? scopes : held
  const lifetimes = tokenLifetimes(deps, client)
  const result = await deps.db.transaction().execute(async (trx) => {
    // Only one exchange of a refresh token can win; a loser is a reuse.
    const ended = await trx
      .updateTable('oauth_token')
      .set({ ended_at: isoAt(deps) })
      .where('id', '=', row.token_id)
      .where('ended_at', 'is', null)
      .executeTakeFirst()
    if (Number(ended.numUpdatedRows) === 0) return null
    // The previous access token is superseded (a grant has one live access token), and exchanged
    // refresh tokens are kept only until they would have expired anyway: reuse is detected while
    // a stolen copy could still be used, and a long-lived grant's rows stay bounded.
    await trx
      .deleteFrom('oauth_token')
      .where('grant_id', '=', row.grant_id)
      .where((eb) =>
        eb.or([
          eb('kind', '=', 'access'),
          eb.and([eb('ended_at', 'is not', null), eb('expires_at', '<=', isoAt(deps))]),
        ]),
      )
      .execute()
    await trx
      .updateTable('oauth_grant')
      .set({ scope: formatScopes(granted), expires_at: isoAt(deps, lifetimes.refreshMs) })
      .where('id', '=', row.grant_id)
      .execute()
    return mintTokens(deps, trx, row.grant_id, lifetimes)
  })
  if (!result) {
    await revokeForReuse(deps, row.grant_id, subject)
    throw invalid()
  }
  return {
    access_token: result.access,
    token_type: 'Bearer',
    expires_in: Math.floor(lifetimes.accessMs / 1000),
    refresh_token: result.refresh,
    scope: formatScopes(granted),
    organization: { id: row.org_id, name: row.org_name },
  }
}

async function revokeForReuse(
  deps: Deps,
  grantId: string,
  subject: { orgId: string; userId: string; memberId: string; role: Role },
): Promise<void> {
  await deps.db.transaction().execute(async (trx) => {
    if (await endGrant(deps, trx, grantId, 'refresh_reuse'))
      await recordAudit(
        deps,
        trx,
        grantActor(subject),
        'oauth_token.revoked',
        { type: 'oauth_token', id: grantId },
        {
          reason: 'refresh_reuse',
        },
      )
  })
}

/**
 * RFC 7009: revokes the grant of an access or refresh token presented by its client. Unknown
 * tokens, and tokens of another client, are answered like success (§2.2), so the endpoint tells
 * nobody whether a string is a token.
 */
export async function revokeByToken(deps: Deps, client: OAuthClient, token: string, hint?: string): Promise<void> {
  if (token.length > 256) return
  const kinds = hint === 'refresh_token' ? ['refresh', 'access'] : ['access', 'refresh']
  for (const kind of kinds) {
    const [row] = await tokenLookup(deps.db, hashToken(token), kind)
    if (!row) continue
    if (row.client_id !== client.id) return
    const subject = {
      orgId: row.org_id,
      userId: row.user_id,
      memberId: row.member_id,
      role: asRole(row.role ?? 'member'),
    }
    await deps.db.transaction().execute(async (trx) => {
      if (await endGrant(deps, trx, row.grant_id, 'client'))
        await recordAudit(
          deps,
          trx,
          grantActor(subject),
          'oauth_token.revoked',
          {
            type: 'oauth_token',
            id: row.grant_id,
          },
          { reason: 'client' },
        )
    })
    return
  }
}

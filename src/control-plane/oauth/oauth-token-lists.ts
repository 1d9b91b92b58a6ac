/**
 * OAuth grants as people manage them: a member lists and revokes their own, admins the
 * organization's, and a member's grants end with their membership (in the removal's transaction).
 * The grants themselves, and the tokens under them, are `oauth-tokens.ts`'s.
 * @module
 */
import { recordAudit, type Actor } from '../admin/audit.ts'
import { controlPlaneError } from '../control-plane-errors.ts'
import type { Deps } from '../deps.ts'
import { keysetPage, type Page } from '../pagination.ts'
import type { Db } from '../schema.ts'
import { endGrant, type RevokedReason } from './oauth-tokens.ts'
import { storedScopes, type OAuthScope } from './oauth-scopes.ts'
import type { OAuthGrantTable } from './oauth-tables.ts'

/** A grant as lists show it; never a token or its hash. */
export interface OAuthTokenView {
  id: string
  clientId: string
  clientName: string
  memberId: string
  userId: string
  scopes: OAuthScope[]
  resource: string | null
  status: 'active' | 'expired' | 'revoked'
  revokedReason: RevokedReason | null
  createdAt: string
  expiresAt: string
  lastUsedAt: string | null
  revokedAt: string | null
}

function view(deps: Deps, row: OAuthGrantTable): OAuthTokenView {
  const expired = Date.parse(row.expires_at) <= deps.now()
  return {
    id: row.id,
    clientId: row.client_id,
    clientName: row.client_name,
    memberId: row.member_id,
    userId: row.user_id,
    scopes: storedScopes(row.scope),
    resource: row.resource,
    status: row.revoked_at ? 'revoked' : expired ? 'expired' : 'active',
    revokedReason: (row.revoked_reason as RevokedReason | null) ?? null,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    lastUsedAt: row.last_used_at,
    revokedAt: row.revoked_at,
  }
}

/** The organization's grants (admins), or one member's (`memberId`), newest first. */
export function listOAuthTokens(
  deps: Deps,
  filter: { orgId: string; memberId?: string },
  page: { cursor?: string; limit: number },
): Promise<Page<OAuthTokenView>> {
  let query = deps.db.selectFrom('oauth_grant').selectAll().where('org_id', '=', filter.orgId)
  if (filter.memberId) query = query.where('member_id', '=', filter.memberId)
  return keysetPage(query, {
    scope: filter.memberId ? 'my-oauth-tokens' : 'oauth-tokens',
    cursor: page.cursor,
    limit: page.limit,
    order: [{ column: 'id', field: 'id', direction: 'desc' }],
    map: (row) => view(deps, row),
  })
}

/**
 * Revokes a grant of the actor's organization: `own` limits it to the actor's own grants (a
 * member revoking their token); 404 for any other id. Revoking a revoked grant changes nothing.
 */
export async function revokeOAuthToken(deps: Deps, actor: Actor, grantId: string, own: boolean): Promise<void> {
  await deps.db.transaction().execute(async (trx) => {
    let query = trx.selectFrom('oauth_grant').select(['id']).where('id', '=', grantId).where('org_id', '=', actor.orgId)
    if (own) query = query.where('member_id', '=', actor.memberId)
    const row = await query.executeTakeFirst()
    if (!row) throw controlPlaneError('oauth_token_not_found', 'OAuth token not found')
    const reason: RevokedReason = own ? 'member' : 'admin'
    if (await endGrant(deps, trx, grantId, reason))
      await recordAudit(deps, trx, actor, 'oauth_token.revoked', { type: 'oauth_token', id: grantId }, { reason })
  })
}

/** Revokes every active grant of a member; returns how many. Call inside the removal transaction. */
export async function revokeMemberOAuthTokens(
  deps: Deps,
  trx: Db,
  actor: Actor,
  memberId: string,
  reason: RevokedReason = 'member_removed',
): Promise<number> {
  const grants = await trx
    .selectFrom('oauth_grant')
    .select('id')
    .where('member_id', '=', memberId)
    .where('revoked_at', 'is', null)
    .execute()
  for (const grant of grants) {
    await endGrant(deps, trx, grant.id, reason)
    await recordAudit(deps, trx, actor, 'oauth_token.revoked', { type: 'oauth_token', id: grant.id }, { reason })
  }
  return grants.length
}

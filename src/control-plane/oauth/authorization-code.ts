/**
 * The authorization code grant with PKCE (RFC 6749 §4.1, RFC 7636 S256 only, OAuth 2.1), for MCP
 * clients. `GET /oauth/authorize` checks the request and sends the browser to the console's consent
 * page; the signed-in person approves for one of their organizations or denies, and the console
 * follows the redirect back to the client. The code (`oac_`, stored as SHA-256) lives 60 seconds,
 * is exchanged once, and only by the same client with the same redirect URI, the verifier of the
 * challenge and the same resource. A code presented twice revokes what the first exchange issued.
 * @module
 */
import { newId } from '../../core/ids.ts'
import { createSha256 } from '../../core/sha256.ts'
import { generateToken, hashToken, secretsEqual } from '../../core/secrets.ts'
import { recordAudit } from '../admin/audit.ts'
import { membershipOf, type Membership } from '../admin/organizations.ts'
import { controlPlaneError } from '../control-plane-errors.ts'
import { isoAt, type Deps } from '../deps.ts'
import { resolveClient, type OAuthClient } from './oauth-clients.ts'
import { OAuthError, oauthError, type OAuthErrorCode } from './oauth-error.ts'
import { requestedScopes, validResource } from './oauth-requests.ts'
import { SCOPE_DESCRIPTIONS, storedScopes, formatScopes, type OAuthScope } from './oauth-scopes.ts'
import type { OAuthAuthorizationTable } from './oauth-tables.ts'
import { endGrant, grantActor, issueGrant, type TokenResponse } from './oauth-tokens.ts'

/** How long a person has to consent. */
export const CONSENT_TTL_MS = 10 * 60_000
/** How long an issued code can be exchanged. */
export const CODE_TTL_MS = 60_000
const CHALLENGE = /^[A-Za-z0-9_-]{43}$/
const VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/

/** An error the client learns about through its redirect URI (RFC 6749 §4.1.2.1). */
export class RedirectError extends Error {
  constructor(
    readonly redirectTo: string,
    readonly error: OAuthErrorCode,
  ) {
    super(error)
    this.name = 'RedirectError'
  }
}

/** The redirect URI with the response parameters added (the issuer too: RFC 9207). */
export function redirectWith(redirectUri: string, params: Record<string, string | null>, issuer: string): string {
  const url = new URL(redirectUri)
  for (const [name, value] of Object.entries(params)) if (value !== null) url.searchParams.set(name, value)
  url.searchParams.set('iss', issuer)
  return url.href
}

/** The consent page of an authorization request. */
export function consentUrl(issuer: string, authorizationId: string): string {
  return `${issuer}/console/#consent=${authorizationId}`
}

/**
 * Checks an authorization request (the query of `GET /oauth/authorize`) and records it pending.
 * Errors before the client and its redirect URI are known are {@link OAuthError}s answered to the
 * browser; after, {@link RedirectError}s sent back to the client.
 */
export async function startAuthorization(
  deps: Deps,
  params: URLSearchParams,
  issuer: string,
): Promise<{ id: string; client: OAuthClient }> {
  const single = (name: string): string | undefined => {
    const values = params.getAll(name)
    if (values.length > 1) throw oauthError('invalid_request', `Parameter ${name} is repeated`)
    const value = values[0]
    if (value !== undefined && value.length > 1024) throw oauthError('invalid_request', `Parameter ${name} is too long`)
    return value === '' ? undefined : value
  }
  const clientId = single('client_id')
  if (!clientId) throw oauthError('invalid_request', 'Missing parameter client_id')
  const client = await resolveClient(deps, clientId).catch((error) => {
    throw error instanceof OAuthError ? oauthError('invalid_client', 'Unknown client_id') : error
  })
  const redirectUri = single('redirect_uri')
  if (!redirectUri || !client.redirectUris.includes(redirectUri))
    throw oauthError('invalid_request', 'redirect_uri must be one the client registered, exactly')
  const state = single('state') ?? null
  const fail = (error: OAuthErrorCode, description: string) =>
    new RedirectError(redirectWith(redirectUri, { error, error_description: description, state }, issuer), error)
  try {
    if (!client.grantTypes.includes('authorization_code'))
      throw fail('unauthorized_client', 'This client may not use the authorization code grant')
    if (single('response_type') !== 'code') throw fail('unsupported_response_type', 'response_type must be code')
    const challenge = single('code_challenge')
    if (!challenge || !CHALLENGE.test(challenge))
      throw fail('invalid_request', 'code_challenge (PKCE, S256) is required')
    if (single('code_challenge_method') !== 'S256') throw fail('invalid_request', 'code_challenge_method must be S256')
    const scopes = requestedScopes(client, single('scope'))
    const rawResource = single('resource')
    const resource = rawResource === undefined ? null : validResource(rawResource)
    await deps.db.deleteFrom('oauth_authorization').where('expires_at', '<', isoAt(deps, -3600_000)).execute()
    const row: OAuthAuthorizationTable = {
      id: newId('oaz', deps.now()),
      client_id: client.id,
      redirect_uri: redirectUri,
      code_challenge: challenge,
      scope: formatScopes(scopes),
      resource,
      state,
      status: 'pending',
      code_hash: null,
      org_id: null,
      member_id: null,
      user_id: null,
      grant_id: null,
      created_at: isoAt(deps),
      expires_at: isoAt(deps, CONSENT_TTL_MS),
    }
    await deps.db.insertInto('oauth_authorization').values(row).execute()
    return { id: row.id, client }
  } catch (error) {
    if (error instanceof OAuthError) throw fail(error.error, error.description)
    throw error
  }
}

/** What the consent page shows. */
export interface AuthorizationView {
  id: string
  client: { id: string; name: string }
  redirectUri: string
  scopes: Array<{ scope: OAuthScope; description: string }>
  resource: string | null
  expiresAt: string
}

async function pendingAuthorization(deps: Deps, id: string): Promise<OAuthAuthorizationTable> {
  const row = await deps.db.selectFrom('oauth_authorization').selectAll().where('id', '=', id).executeTakeFirst()
  if (row?.status !== 'pending' || Date.parse(row.expires_at) <= deps.now())
    throw controlPlaneError('oauth_authorization_not_found', 'No pending authorization request with this id')
  return row
}

/** A pending request for the consent page. */
export async function describeAuthorization(deps: Deps, id: string): Promise<AuthorizationView> {
  const row = await pendingAuthorization(deps, id)
  const client = await resolveClient(deps, row.client_id)
  return {
    id: row.id,
    client: { id: client.id, name: client.name },
    redirectUri: row.redirect_uri,
    scopes: storedScopes(row.scope).map((scope) => ({ scope, description: SCOPE_DESCRIPTIONS[scope] })),
    resource: row.resource,
    expiresAt: row.expires_at,
  }
}

/** Approves for the signed-in user in `orgId` (one of theirs); returns where the browser goes next. */
export async function approveAuthorization(
  deps: Deps,
  id: string,
  userId: string,
  orgId: string | null,
  issuer: string,
): Promise<{ redirectTo: string; member: Membership }> {
  const row = await pendingAuthorization(deps, id)
  if (!orgId)
    throw controlPlaneError(
      'no_organization',
      'You are not a member of any organization; create one or accept an invitation',
    )
  const member = await membershipOf(deps, userId, orgId)
  if (!member) throw controlPlaneError('organization_not_found', 'Organization not found')
  const code = generateToken('oac_')
  await deps.db.transaction().execute(async (trx) => {
    const updated = await trx
      .updateTable('oauth_authorization')
      .set({
        status: 'approved',
        code_hash: hashToken(code),
        org_id: member.orgId,
        member_id: member.memberId,
        user_id: userId,
        expires_at: isoAt(deps, CODE_TTL_MS),
      })
      .where('id', '=', row.id)
      .where('status', '=', 'pending')
      .executeTakeFirst()
    if (Number(updated.numUpdatedRows) === 0)
      throw controlPlaneError('oauth_authorization_not_found', 'No pending authorization request with this id')
    await recordAudit(
      deps,
      trx,
      { ...grantActor({ ...member, userId }), credential: 'session' },
      'oauth_authorization.approved',
      { type: 'oauth_authorization', id: row.id },
      { clientId: row.client_id, scope: row.scope, resource: row.resource },
    )
  })
  return { redirectTo: redirectWith(row.redirect_uri, { code, state: row.state }, issuer), member }
}

/** Denies; returns the redirect that tells the client `access_denied`. */
export async function denyAuthorization(deps: Deps, id: string, userId: string, issuer: string): Promise<string> {
  const row = await pendingAuthorization(deps, id)
  const updated = await deps.db
    .updateTable('oauth_authorization')
    .set({ status: 'denied', user_id: userId })
    .where('id', '=', row.id)
    .where('status', '=', 'pending')
    .executeTakeFirst()
  if (Number(updated.numUpdatedRows) === 0)
    throw controlPlaneError('oauth_authorization_not_found', 'No pending authorization request with this id')
  return redirectWith(
    row.redirect_uri,
    { error: 'access_denied', error_description: 'The request was denied', state: row.state },
    issuer,
  )
}

function s256(verifier: string): string {
  return Buffer.from(createSha256().update(verifier).digest()).toString('base64url')
}

/** The token endpoint's authorization code grant. */
export async function exchangeCode(
  deps: Deps,
  input: { client: OAuthClient; code: string; redirectUri: string; codeVerifier: string; resource?: string },
): Promise<TokenResponse> {
  const invalid = (description: string) => oauthError('invalid_grant', description)
  if (!VERIFIER.test(input.codeVerifier))
    throw oauthError('invalid_request', 'code_verifier must be 43-128 unreserved characters')
  if (input.code.length > 256) throw invalid('Unknown code')
  const row = await deps.db
    .selectFrom('oauth_authorization')
    .selectAll()
    .where('code_hash', '=', hashToken(input.code))
    .executeTakeFirst()
  if (!row) throw invalid('Unknown code')
  if (row.status === 'issued') {
    // A code used twice was intercepted or replayed: what it issued is no longer trusted.
    if (row.grant_id) {
      const grantId = row.grant_id
      await deps.db.transaction().execute(async (trx) => {
        if (await endGrant(deps, trx, grantId, 'code_reuse'))
          await recordAudit(
            deps,
            trx,
            grantActor({ orgId: row.org_id!, userId: row.user_id!, memberId: row.member_id!, role: 'member' }),
            'oauth_token.revoked',
            { type: 'oauth_token', id: grantId },
            { reason: 'code_reuse' },
          )
      })
    }
    throw invalid('The code was already used')
  }
  if (row.status !== 'approved' || row.client_id !== input.client.id) throw invalid('Unknown code')
  if (Date.parse(row.expires_at) <= deps.now()) throw invalid('The code expired')
  if (row.redirect_uri !== input.redirectUri) throw invalid('redirect_uri does not match the authorization request')
  if (!secretsEqual(s256(input.codeVerifier), row.code_challenge))
    throw invalid('code_verifier does not match the code_challenge')
  if (input.resource !== undefined && input.resource !== row.resource)
    throw oauthError('invalid_target', 'resource does not match the authorization request')
  return deps.db.transaction().execute(async (trx) => {
    const claimed = await trx
      .updateTable('oauth_authorization')
      .set({ status: 'issued' })
      .where('id', '=', row.id)
      .where('status', '=', 'approved')
      .executeTakeFirst()
    if (Number(claimed.numUpdatedRows) === 0) throw invalid('The code was already used')
    const member = await membershipOf({ ...deps, db: trx } as Deps, row.user_id!, row.org_id!)
    if (!member || member.memberId !== row.member_id)
      throw oauthError('access_denied', 'The approving member is no longer in the organization')
    const issued = await issueGrant(
      deps,
      trx,
      { ...member, userId: row.user_id! },
      input.client,
      storedScopes(row.scope),
      row.resource,
    )
    await trx.updateTable('oauth_authorization').set({ grant_id: issued.grantId }).where('id', '=', row.id).execute()
    return issued.response
  })
}

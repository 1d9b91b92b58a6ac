/**
 * Dynamic client registration (RFC 7591) for MCP clients: public clients only (no secret,
 * `token_endpoint_auth_method: none`), authorization code with PKCE and refresh. Redirect URIs are
 * an allow-list of shapes: https anywhere, or http on a loopback host (RFC 8252 §7.3: a native
 * client listening on the machine it runs on); never a fragment or user info. Registration is
 * open, as MCP clients expect, and bounded per client address.
 * @module
 */
import { newId } from '../../core/ids.ts'
import { hashToken } from '../../core/secrets.ts'
import { isoAt, type Deps } from '../deps.ts'
import { oauthError } from './oauth-error.ts'
import { formatScopes, OAUTH_SCOPES, parseScopes } from './oauth-scopes.ts'
import type { OAuthClientTable } from './oauth-tables.ts'

/** Registrations one client address may make per hour. */
export const MAX_REGISTRATIONS_PER_ADDRESS = 20
const REGISTRATION_WINDOW_MS = 3600_000
const MAX_REDIRECT_URIS = 10
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]'])

/** The registration answer (RFC 7591 §3.2.1). */
export interface RegisteredClient {
  client_id: string
  client_id_issued_at: number
  client_name: string
  redirect_uris: string[]
  grant_types: string[]
  response_types: string[]
  token_endpoint_auth_method: 'none'
  scope: string
}

/** True for a redirect URI this server accepts: https, or http on a loopback host. */
export function allowedRedirectUri(value: string): boolean {
  if (value.length > 512 || value.includes('#')) return false
  let url: URL
  try {
    url = new URL(value)
  } catch {
    return false
  }
  if (url.username !== '' || url.password !== '') return false
  if (url.protocol === 'https:') return url.hostname !== ''
  return url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname)
}

const metadata = (description: string) => oauthError('invalid_client_metadata', description)

function stringList(value: unknown, field: string): string[] | undefined {
  if (value === undefined) return undefined
  if (!Array.isArray(value) || !value.every((item) => typeof item === 'string'))
    throw metadata(`${field} must be an array of strings`)
  return value as string[]
}

/** Registers a client from a parsed JSON body. */
export async function registerClient(deps: Deps, body: unknown, address: string | null): Promise<RegisteredClient> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw metadata('The body must be a JSON object')
  const input = body as Record<string, unknown>
  const redirectUris = stringList(input.redirect_uris, 'redirect_uris')
  if (!redirectUris || redirectUris.length === 0)
    throw oauthError('invalid_redirect_uri', 'redirect_uris must name at least one URI')
  if (redirectUris.length > MAX_REDIRECT_URIS)
    throw oauthError('invalid_redirect_uri', `At most ${MAX_REDIRECT_URIS} redirect URIs`)
  const refused = redirectUris.find((uri) => !allowedRedirectUri(uri))
  if (refused !== undefined)
    throw oauthError(
      'invalid_redirect_uri',
      'Redirect URIs must be https, or http on localhost, 127.0.0.1 or [::1], without a fragment',
    )
  const grantTypes = stringList(input.grant_types, 'grant_types') ?? ['authorization_code', 'refresh_token']
  if (!grantTypes.every((grant) => grant === 'authorization_code' || grant === 'refresh_token'))
    throw metadata('grant_types may only be authorization_code and refresh_token')
  const responseTypes = stringList(input.response_types, 'response_types') ?? ['code']
  if (!responseTypes.every((type) => type === 'code')) throw metadata('response_types may only be code')
  const method = input.token_endpoint_auth_method
  if (method !== undefined && method !== 'none')
    throw metadata('Only public clients register here: token_endpoint_auth_method must be none')
  const rawName = input.client_name
  if (rawName !== undefined && typeof rawName !== 'string') throw metadata('client_name must be a string')
  // Shown on the consent page: control characters are dropped and the length bounded.
  const name =
    (rawName ?? '')
      .replace(/[\u0000-\u001f\u007f]/g, '')
      .trim()
      .slice(0, 100) || 'Unnamed MCP client'
  const rawScope = input.scope
  if (rawScope !== undefined && typeof rawScope !== 'string') throw metadata('scope must be a string')
  const scopes = rawScope === undefined ? [...OAUTH_SCOPES] : parseScopes(rawScope)
  if (!scopes || scopes.length === 0) throw metadata(`scope must be made of ${OAUTH_SCOPES.join(', ')}`)

  const addressHash = address ? hashToken(`address:${address}`) : null
  if (addressHash) {
    const recent = await deps.db
      .selectFrom('oauth_client')
      .select((eb) => eb.fn.countAll<number>().as('count'))
      .where('address_hash', '=', addressHash)
      .where('created_at', '>', isoAt(deps, -REGISTRATION_WINDOW_MS))
      .executeTakeFirstOrThrow()
    if (Number(recent.count) >= MAX_REGISTRATIONS_PER_ADDRESS) {
      const error = oauthError(
        'temporarily_unavailable',
        'Too many client registrations from this address; try again later',
        429,
      )
      Object.assign(error.headers, { 'retry-after': String(REGISTRATION_WINDOW_MS / 1000) })
      throw error
    }
  }
  const row: OAuthClientTable = {
    id: newId('ocl', deps.now()),
    name,
    redirect_uris: JSON.stringify(redirectUris),
    scope: formatScopes(scopes),
    address_hash: addressHash,
    created_at: isoAt(deps),
  }
  await deps.db.insertInto('oauth_client').values(row).execute()
  return {
    client_id: row.id,
    client_id_issued_at: Math.floor(deps.now() / 1000),
    client_name: name,
    redirect_uris: redirectUris,
    grant_types: grantTypes,
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
    scope: row.scope,
  }
}

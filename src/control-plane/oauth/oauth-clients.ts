/**
 * The clients the authorization server knows. Three are built in and public (no secret, RFC 6749
 * §2.1): stock OpenCode's auth command, `service-server org token`, and `service-server org link`.
 * They use the device grant, receive `delivery:read`, and their tokens live long (OpenCode stores
 * its token and cannot refresh it), like an API key, while staying revocable. Every other client
 * registered itself (RFC 7591, MCP clients): authorization code with PKCE, one-hour access tokens
 * and rotating refresh tokens.
 * @module
 */
import type { Deps } from '../deps.ts'
import { oauthError } from './oauth-error.ts'
import { storedScopes, type OAuthScope } from './oauth-scopes.ts'
import type { OAuthClientTable } from './oauth-tables.ts'

/** Default lifetime of a built-in client's tokens (config `oauth.tokenTtlDays`). */
export const DEFAULT_TOKEN_TTL_DAYS = 90
/** Access tokens of registered (MCP) clients live one hour; their refresh tokens rotate. */
export const MCP_ACCESS_TTL_MS = 3600_000
/** A registered client's refresh token lives 30 days unless exchanged. */
export const MCP_REFRESH_TTL_MS = 30 * 24 * 3600_000

/** A client as the grants see it. */
export interface OAuthClient {
  id: string
  name: string
  builtIn: boolean
  /** The scopes this client may be granted; a request for more is `invalid_scope`. */
  allowedScopes: readonly OAuthScope[]
  /** What a request without `scope` receives. */
  defaultScopes: readonly OAuthScope[]
  grantTypes: readonly string[]
  /** Exact redirect URIs (authorization code clients only). */
  redirectUris: readonly string[]
}

/** The device grant's type (RFC 8628 §3.4). */
export const DEVICE_CODE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code'

const BUILT_IN: ReadonlyArray<
  Omit<OAuthClient, 'builtIn' | 'allowedScopes' | 'defaultScopes' | 'grantTypes' | 'redirectUris'>
> = [
  { id: 'opencode', name: 'OpenCode' },
  { id: 'service-cli', name: 'service-server org token' },
  { id: 'service-workspace', name: 'service-server workspace link' },
]

/** The built-in clients by id. */
export const BUILT_IN_CLIENTS: ReadonlyMap<string, OAuthClient> = new Map(
  BUILT_IN.map((client) => [
    client.id,
    {
      ...client,
      builtIn: true,
      allowedScopes: ['delivery:read'],
      defaultScopes: ['delivery:read'],
      grantTypes: [DEVICE_CODE_GRANT, 'refresh_token'],
      redirectUris: [],
    },
  ]),
)

/** Lifetimes of a client's tokens. */
export function tokenLifetimes(
  deps: Pick<Deps, 'settings'>,
  client: OAuthClient,
): { accessMs: number; refreshMs: number } {
  if (client.builtIn) {
    const ms = (deps.settings.oauthTokenTtlDays ?? DEFAULT_TOKEN_TTL_DAYS) * 24 * 3600_000
    return { accessMs: ms, refreshMs: ms }
  }
  return { accessMs: MCP_ACCESS_TTL_MS, refreshMs: MCP_REFRESH_TTL_MS }
}

/** What a registered client receives when it asks for no scope: reading, not writing. */
const REGISTERED_DEFAULT_SCOPES: readonly OAuthScope[] = ['delivery:read', 'catalog:read']

/** A registered client row as the grants see it. */
export function registeredClient(row: OAuthClientTable): OAuthClient {
  const allowedScopes = storedScopes(row.scope)
  return {
    id: row.id,
    name: row.name,
    builtIn: false,
    allowedScopes,
    defaultScopes: REGISTERED_DEFAULT_SCOPES.filter((scope) => allowedScopes.includes(scope)),
    grantTypes: ['authorization_code', 'refresh_token'],
    redirectUris: JSON.parse(row.redirect_uris) as string[],
  }
}

/** The client named by `client_id`, or `invalid_client` (401, RFC 6749 §5.2). */
export async function resolveClient(deps: Deps, clientId: string): Promise<OAuthClient> {
  const builtIn = BUILT_IN_CLIENTS.get(clientId)
  if (builtIn) return builtIn
  if (clientId.length <= 64) {
    const row = await deps.db.selectFrom('oauth_client').selectAll().where('id', '=', clientId).executeTakeFirst()
    if (row) return registeredClient(row)
  }
  throw oauthError('invalid_client', 'Unknown client_id', 401)
}

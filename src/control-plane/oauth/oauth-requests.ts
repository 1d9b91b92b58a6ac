/**
 * Checks shared by the grants: the scopes a client asks for, and the resource indicator.
 * @module
 */
import type { OAuthClient } from './oauth-clients.ts'
import { oauthError } from './oauth-error.ts'
import { parseScopes, type OAuthScope } from './oauth-scopes.ts'

/** The scopes to grant for a request's `scope` parameter: the client's defaults when absent. */
export function requestedScopes(client: OAuthClient, scope: string | undefined): OAuthScope[] {
  if (scope === undefined) return [...client.defaultScopes]
  const scopes = parseScopes(scope)
  if (scopes === null) throw oauthError('invalid_scope', 'Unknown scope')
  if (scopes.length === 0) return [...client.defaultScopes]
  const refused = scopes.filter((s) => !client.allowedScopes.includes(s))
  if (refused.length > 0) throw oauthError('invalid_scope', `This client may not ask for ${refused.join(' ')}`)
  return scopes
}

/**
 * A resource indicator (RFC 8707 §2): an absolute http(s) URI without a fragment. Stored on the
 * grant; a resource server (the MCP endpoint) refuses tokens bound to another resource.
 */
export function validResource(value: string): string {
  let url: URL
  try {
    url = new URL(value)
  } catch {
    throw oauthError('invalid_target', 'resource must be an absolute URI')
  }
  if ((url.protocol !== 'https:' && url.protocol !== 'http:') || url.hash !== '' || value.includes('#'))
    throw oauthError('invalid_target', 'resource must be an http(s) URI without a fragment')
  if (value.length > 512) throw oauthError('invalid_target', 'resource is too long')
  return value
}

/**
 * The scopes an OAuth token can carry. A token never holds more than its member's role allows:
 * a scope only selects which of the member's permissions the token may use (see `policy.ts`).
 * @module
 */

/** Every scope, narrowest first. */
export const OAUTH_SCOPES = ['delivery:read', 'catalog:read', 'catalog:write'] as const
/** An OAuth scope. */
export type OAuthScope = (typeof OAUTH_SCOPES)[number]

/** What each scope lets a token do, for consent pages and the metadata document. */
export const SCOPE_DESCRIPTIONS: Record<OAuthScope, string> = {
  'delivery:read': 'Read what the organization delivers to you (skills, agents, commands, MCP servers)',
  'catalog:read': 'Read the configuration objects, skills, hubs, plugins and marketplaces you can see',
  'catalog:write': 'Create and change configuration objects and skills where your role and grants allow',
}

/** True when `value` is a known scope. */
export function isScope(value: string): value is OAuthScope {
  return (OAUTH_SCOPES as readonly string[]).includes(value)
}

/**
 * Parses a space-separated `scope` parameter (RFC 6749 §3.3) into known scopes in canonical order,
 * or null when any is unknown. Duplicates collapse; an empty string is an empty list.
 */
export function parseScopes(value: string): OAuthScope[] | null {
  const words = value.split(' ').filter((word) => word !== '')
  if (!words.every(isScope)) return null
  return OAUTH_SCOPES.filter((scope) => words.includes(scope))
}

/** The stored and wire form of a scope list. */
export function formatScopes(scopes: readonly OAuthScope[]): string {
  return OAUTH_SCOPES.filter((scope) => scopes.includes(scope)).join(' ')
}

/** A stored scope string back into scopes (unknown words, which only a downgrade could leave, are dropped). */
export function storedScopes(value: string): OAuthScope[] {
  return value.split(' ').filter(isScope)
}

/**
 * Token scopes and their order: what an issued token, the configured tokens and a route's auth
 * rule name, below both the token store and the authenticator that read them.
 * @module
 */

/** Token scopes, lowest to highest. */
export const SCOPES = ['viewer', 'collaborator', 'owner'] as const
/** A token scope. */
export type Scope = (typeof SCOPES)[number]

/** Rank of a scope, for "at least" comparisons. */
export function scopeRank(scope: Scope | null): number {
  return scope ? SCOPES.indexOf(scope) + 1 : 0
}

/**
 * Who is calling over MCP, per request: the principal the control plane's authenticator resolved
 * for this very request (so a role change or a revoked credential takes effect on the next call),
 * the actor for domain functions (origin `mcp`, recorded in the audit log), and what the caller
 * may do under the one policy table.
 * @module
 */
import { actorOf, type ControlPlanePrincipal } from '../auth.ts'
import type { Actor } from '../admin/audit.ts'
import { controlPlaneError } from '../control-plane-errors.ts'
import { allows, type CredentialKind, type Permission } from '../policy.ts'

/** The caller of one MCP request. */
export interface McpCaller {
  principal: ControlPlanePrincipal
  actor: Actor
  /** True when the credential may use write tools (see {@link callerOf}). */
  canWrite: boolean
  allows(permission: Permission): boolean
  /** Throws 403 `forbidden` unless the caller holds `permission`. */
  require(permission: Permission): void
}

/**
 * The caller for a principal acting in an organization. An OAuth token reaches what its scopes
 * allow (writing needs `catalog:write`), never more than its member's role and grants. API keys
 * and session tokens carry the member's whole authority over HTTP already, so over MCP they may
 * write wherever the member's role and grants allow; refusing them here would protect nothing.
 */
export function callerOf(principal: ControlPlanePrincipal): McpCaller {
  const actor: Actor = { ...actorOf(principal), origin: 'mcp' }
  const scopes = principal.oauth?.scopes ?? []
  const holds = (permission: Permission) =>
    allows(permission, principal.org!.role, principal.credential as CredentialKind, scopes)
  return {
    principal,
    actor,
    canWrite: principal.oauth === null || scopes.includes('catalog:write'),
    allows: holds,
    require(permission) {
      if (!holds(permission))
        throw controlPlaneError('forbidden', `Not allowed: needs ${permission}`, { details: { permission } })
    },
  }
}

/** The key sessions are bound to: a session is only ever used with the credential that opened it. */
export function credentialKey(principal: ControlPlanePrincipal): string {
  if (principal.apiKeyId) return `key:${principal.apiKeyId}`
  // The grant id, which stays the same across refreshes: a refreshed token keeps its sessions.
  if (principal.oauth) return `oauth:${principal.oauth.tokenId}`
  if (principal.session) return `session:${principal.session.id}`
  throw new Error('MCP caller without a credential')
}

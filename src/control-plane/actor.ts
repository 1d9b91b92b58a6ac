/**
 * Who is acting, in which organization: the identity every control-plane operation, audit row and
 * visibility check is about. Kept below the modules that use it (audit, change feed, grants,
 * visibility) so none of them imports another just for this type.
 * @module
 */
import type { CredentialKind, Role } from './policy.ts'

/** Who is acting, in which organization. Built from the authenticated principal. */
export interface Actor {
  orgId: string
  userId: string
  memberId: string
  role: Role
  /** `scim`: an identity provider with the organization's SCIM token (`userId`/`memberId`: the token's creator). */
  credential: CredentialKind | 'scim'
  apiKeyId: string | null
  /** Where the action came from when not the HTTP API (an MCP tool call); recorded with its audit event. */
  origin?: 'mcp' | 'scim'
}

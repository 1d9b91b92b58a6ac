/**
 * Authentication and authorization for the control plane: turns `Authorization: Bearer
 * <session-token>` or `x-api-key: <key>` into a principal, resolves the organization it acts in,
 * and enforces the route's rule against the policy table.
 *
 * Organization precedence: the API key's organization; else `X-Service-Org-Id` (must be one of the
 * caller's, otherwise 404 as if it did not exist); else the session's active organization; else
 * the caller's earliest membership, written back to the session.
 * @module
 */
import { bearerToken } from '../core/bearer-token.ts'
import { errors } from '../core/errors.ts'
import { andThen, type MaybePromise } from '../core/maybe-promise.ts'
import type { SurfaceAuth } from '../core/http-app.ts'
import { API_KEY_PREFIX, type ResolvedApiKey, resolveApiKey } from './admin/api-keys.ts'
import type { Actor } from './admin/audit.ts'
import { firstMembership, type Membership } from './admin/organizations.ts'
import type { Deps } from './deps.ts'
import { resolveSession, setActiveOrg, type ResolvedSession } from './identity/sessions.ts'
import { toUserView, type UserView } from './identity/users-view.ts'
import { allows, asRole, POLICY, type ControlPlaneRule, type CredentialKind, type Role } from './policy.ts'
import { controlPlaneError } from './control-plane-errors.ts'

/** The header naming the organization to act in. */
export const ORG_HEADER = 'x-service-org-id'
const ORG_ID = /^org_[0-9a-hjkmnp-tv-z]{26}$/

/** The authenticated caller. Fields are null for anonymous callers on public routes. */
export interface ControlPlanePrincipal {
  credential: CredentialKind | 'none'
  user: UserView | null
  session: { id: string; expiresAt: string; activeOrgId: string | null } | null
  apiKeyId: string | null
  /** The organization acted in, with the caller's membership; null when none resolved. */
  org: { id: string; name: string; memberId: string; role: Role } | null
}

const anonymous: ControlPlanePrincipal = { credential: 'none', user: null, session: null, apiKeyId: null, org: null }

/** The actor for audit and domain calls; only valid on `org` routes (the rule guarantees an org). */
export function actorOf(principal: ControlPlanePrincipal): Actor {
  if (!principal.user || !principal.org || principal.credential === 'none') throw errors.internal()
  return {
    orgId: principal.org.id,
    userId: principal.user.id,
    memberId: principal.org.memberId,
    role: principal.org.role,
    credential: principal.credential,
    apiKeyId: principal.apiKeyId,
  }
}

const notFoundOrg = () => controlPlaneError('organization_not_found', 'Organization not found')

/**
 * The session's organization: the header's (which must be one of the caller's), else the active
 * one, else the caller's earliest membership, written back so the next request finds it directly.
 */
function resolveSessionOrg(
  deps: Deps,
  session: ResolvedSession,
  headerOrg: string | null,
): MaybePromise<Membership | null> {
  const found = session.membership
  if (found) return { orgId: found.orgId, orgName: found.orgName, memberId: found.memberId, role: asRole(found.role) }
  if (headerOrg !== null) throw notFoundOrg()
  return (async () => {
    const fallback = await firstMembership(deps, session.user.id)
    if ((fallback?.orgId ?? null) !== session.activeOrgId)
      await setActiveOrg(deps.db, session.id, fallback?.orgId ?? null)
    return fallback
  })()
}

/** The principal of a signed-in session acting in `member`'s organization (none when null). */
function sessionPrincipal(session: ResolvedSession, member: Membership | null): ControlPlanePrincipal {
  return {
    credential: 'session',
    user: session.user,
    session: { id: session.id, expiresAt: session.expiresAt, activeOrgId: member?.orgId ?? null },
    apiKeyId: null,
    org: member ? { id: member.orgId, name: member.orgName, memberId: member.memberId, role: member.role } : null,
  }
}

/**
 * Authenticates the caller from headers; null rule kinds never reach here. A session is answered
 * without a promise when nothing on its way waits (see core/maybe-promise.ts).
 */
function identify(deps: Deps, request: Request): MaybePromise<ControlPlanePrincipal> {
  const apiKey = request.headers.get('x-api-key')
  const headerOrg = request.headers.get(ORG_HEADER)
  const token = bearerToken(request)
  if (token?.startsWith(API_KEY_PREFIX))
    throw errors.unauthorized('API keys are sent in the x-api-key header, not as a bearer token')
  if (apiKey !== null) {
    // A generated client configured with one token sends it under every declared scheme: with a
    // bearer session present, the API key header is the credential only when it is a valid key.
    if (!token) return identifyApiKey(deps, apiKey.trim(), headerOrg)
    if (apiKey.trim().startsWith(API_KEY_PREFIX)) {
      return resolveApiKey(deps, apiKey.trim()).then((resolved) =>
        'rejected' in resolved ? identifySession(deps, token, headerOrg) : apiKeyPrincipal(resolved, headerOrg),
      )
    }
    return identifySession(deps, token, headerOrg)
  }
  if (!token) throw errors.unauthorized('Send Authorization: Bearer <session-token> or x-api-key: <key>')
  return identifySession(deps, token, headerOrg)
}

/** Authenticates a bearer session token, then resolves the organization it acts in. */
function identifySession(deps: Deps, token: string, headerOrg: string | null): MaybePromise<ControlPlanePrincipal> {
  if (headerOrg !== null && !ORG_ID.test(headerOrg)) {
    // Still authenticate first: a bad credential is 401 whatever the header says.
    return andThen(resolveSession(deps, token), (session) => {
      if (!session) throw errors.unauthorized('Invalid or expired session')
      throw notFoundOrg()
    })
  }
  return andThen(resolveSession(deps, token, headerOrg), (session) => {
    if (!session) throw errors.unauthorized('Invalid or expired session')
    return andThen(resolveSessionOrg(deps, session, headerOrg), (member) => sessionPrincipal(session, member))
  })
}

async function identifyApiKey(deps: Deps, apiKey: string, headerOrg: string | null): Promise<ControlPlanePrincipal> {
  const resolved = await resolveApiKey(deps, apiKey)
  if ('rejected' in resolved) {
    throw errors.unauthorized(resolved.rejected === 'unknown' ? 'Invalid API key' : `API key ${resolved.rejected}`)
  }
  return apiKeyPrincipal(resolved, headerOrg)
}

/** The principal of a valid API key; a header naming another organization is 404. */
function apiKeyPrincipal(resolved: ResolvedApiKey, headerOrg: string | null): ControlPlanePrincipal {
  if (headerOrg !== null && headerOrg !== resolved.orgId) throw notFoundOrg()
  return {
    credential: 'apiKey',
    user: toUserView(resolved.user),
    session: null,
    apiKeyId: resolved.id,
    org: { id: resolved.orgId, name: resolved.orgName, memberId: resolved.memberId, role: resolved.role },
  }
}

/** The control plane's authenticator over its domain dependencies. */
export function controlPlaneAuth(deps: Deps): SurfaceAuth<ControlPlaneRule, ControlPlanePrincipal> {
  const authorize = (
    principal: ControlPlanePrincipal,
    rule: Extract<ControlPlaneRule, { kind: 'identity' | 'org' }>,
  ): ControlPlanePrincipal => {
    if (rule.kind === 'identity') {
      if (rule.sessionOnly && principal.credential !== 'session')
        throw controlPlaneError('session_required', 'This action needs a signed-in session, not an API key')
      return principal
    }
    if (!principal.org)
      throw controlPlaneError(
        'no_organization',
        'You are not a member of any organization; create one or accept an invitation',
      )
    if (!allows(rule.permission, principal.org.role, principal.credential as CredentialKind)) {
      throw controlPlaneError('forbidden', `Not allowed: needs ${rule.permission}`, {
        details: { permission: rule.permission, role: principal.org.role, credential: principal.credential },
      })
    }
    return principal
  }
  return {
    authenticate(request, rule) {
      // Public routes answer without a promise: /health is polled far more often than anything else.
      if (rule.kind === 'public') return anonymous
      // The Worker heartbeat checks its activity token against the Worker in the path itself.
      if (rule.kind === 'workerToken') return anonymous
      return andThen(identify(deps, request), (principal) => authorize(principal, rule))
    },
    security(rule): Array<Record<string, string[]>> {
      if (rule.kind === 'public') return []
      if (rule.kind === 'workerToken') return [{ workerActivityToken: [] }]
      if (rule.kind === 'identity' && rule.sessionOnly) return [{ bearerSession: [] }]
      if (rule.kind === 'org' && !POLICY[rule.permission].apiKey) return [{ bearerSession: [] }]
      return [{ bearerSession: [] }, { apiKey: [] }]
    },
    statuses(rule) {
      if (rule.kind === 'public') return []
      if (rule.kind === 'workerToken') return [401]
      // 404: an X-Service-Org-Id the caller does not belong to.
      if (rule.kind === 'identity') return rule.sessionOnly ? [401, 403, 404] : [401, 404]
      return [401, 403, 404]
    },
  }
}

/** OpenAPI security schemes of the control plane. */
export const controlPlaneSecuritySchemes = {
  bearerSession: {
    type: 'http',
    scheme: 'bearer',
    description:
      'Session token from POST /v1/auth/sign-in or sign-up (prefix sst_). An API key sent here is refused with 401.',
  },
  workerActivityToken: {
    type: 'http',
    scheme: 'bearer',
    description: "A Worker runtime's activity token (prefix wka_), accepted only on that Worker's heartbeat route.",
  },
  apiKey: {
    type: 'apiKey',
    in: 'header',
    name: 'x-api-key',
    description: 'Organization API key (prefix svc_); acts as the member who created it, in that organization.',
  },
}

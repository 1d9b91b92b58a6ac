/**
 * Authentication and authorization for the control plane: turns `Authorization: Bearer
 * <session-token>`, `Authorization: Bearer oat_…` (an OAuth access token) or `x-api-key: <key>`
 * into a principal, resolves the organization it acts in, and enforces the route's rule against
 * the policy table (and, for OAuth tokens, the token's scopes).
 *
 * Organization precedence: the API key's or OAuth token's organization; else `X-Service-Org-Id` (must be one of the
 * caller's, otherwise 404 as if it did not exist); else the session's active organization; else
 * the caller's earliest membership, written back to the session.
 * @module
 */
import { bearerToken } from '../core/bearer-token.ts'
import { ApiError, errors } from '../core/errors.ts'
import { andThen, type MaybePromise } from '../core/maybe-promise.ts'
import type { SurfaceAuth } from '../core/http-app.ts'
import { API_KEY_PREFIX, type ResolvedApiKey, resolveApiKey } from './admin/api-keys.ts'
import type { Actor } from './admin/audit.ts'
import { firstMembership, type Membership } from './admin/organizations.ts'
import type { Deps } from './deps.ts'
import { readAdmissionPolicy, ssoRequiredError } from './admission/admission-policy.ts'
import { resolveSession, setActiveOrg, type ResolvedSession } from './identity/sessions.ts'
import { toUserView, type UserView } from './identity/users-view.ts'
import {
  allows,
  asRole,
  POLICY,
  scopesCover,
  type ControlPlaneRule,
  type CredentialKind,
  type Permission,
  type PermissionPolicy,
  type Role,
} from './policy.ts'
import { controlPlaneError } from './control-plane-errors.ts'
import { resolveWorkerToken, WORKER_ACTIVITY_PREFIX, type WorkerPrincipal } from './delivery/worker-principal.ts'
import { noteAuditPrincipal } from './audit/request-audit.ts'
import { resolveScimToken, type ResolvedScimToken } from './scim/scim-tokens.ts'
import { scimStatusError } from './scim/scim-error.ts'
import { ACCESS_TOKEN_PREFIX, REFRESH_TOKEN_PREFIX, resolveOAuthToken } from './oauth/oauth-tokens.ts'
import type { OAuthScope } from './oauth/oauth-scopes.ts'

/** The header naming the organization to act in. */
export const ORG_HEADER = 'x-service-org-id'
const ORG_ID = /^org_[0-9a-hjkmnp-tv-z]{26}$/

/** The authenticated caller. Fields are null for anonymous callers on public routes. */
export interface ControlPlanePrincipal {
  credential: CredentialKind | 'worker' | 'scim' | 'none'
  user: UserView | null
  /** `ssoOrgId`: the organization whose provider signed the session in (null: a password session). */
  session: { id: string; expiresAt: string; activeOrgId: string | null; ssoOrgId?: string | null } | null
  apiKeyId: string | null
  /** The organization acted in, with the caller's membership; null when none resolved. */
  org: { id: string; name: string; memberId: string; role: Role } | null
  /**
   * The OAuth token's grant (`tokenId`: the grant id, stable across refreshes), client, scopes and
   * resource indicator; null for other credentials.
   */
  oauth: {
    tokenId: string
    clientId: string
    scopes: readonly OAuthScope[]
    resource: string | null
    expiresAt: string
  } | null
  /** A Worker's runtime (activity token), on routes whose rule accepts Workers; `org` is then null. */
  worker?: WorkerPrincipal | null
  /**
   * The organization this session asked for but may not act in: it requires sign-in with its
   * provider and this is a password session (organization routes answer 403 `sso_required`).
   */
  ssoRequiredOrgId?: string | null
  /** An identity provider's SCIM token, on the `/scim/v2` routes only; `org` is then null. */
  scim?: ResolvedScimToken | null
}

const anonymous: ControlPlanePrincipal = {
  credential: 'none',
  user: null,
  session: null,
  apiKeyId: null,
  org: null,
  oauth: null,
}

/** The actor for audit and domain calls; only valid on `org` routes (the rule guarantees an org). */
export function actorOf(principal: ControlPlanePrincipal): Actor {
  if (
    !principal.user ||
    !principal.org ||
    principal.credential === 'none' ||
    principal.credential === 'worker' ||
    principal.credential === 'scim'
  )
    throw errors.internal()
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
): MaybePromise<(Membership & { ssoRequired?: boolean }) | null> {
  const found = session.membership
  if (found)
    return {
      orgId: found.orgId,
      orgName: found.orgName,
      memberId: found.memberId,
      role: asRole(found.role),
      ssoRequired: found.ssoRequired,
    }
  if (headerOrg !== null) throw notFoundOrg()
  return (async () => {
    const fallback = await firstMembership(deps, session.user.id)
    if ((fallback?.orgId ?? null) !== session.activeOrgId)
      await setActiveOrg(deps.db, session.id, fallback?.orgId ?? null)
    if (!fallback || session.ssoOrgId === fallback.orgId) return fallback
    // Only this path (no active organization yet) reads the policy separately; the usual lookup joins it.
    return { ...fallback, ssoRequired: (await readAdmissionPolicy(deps.db, fallback.orgId)).requireSso }
  })()
}

/** The principal of a signed-in session acting in `member`'s organization (none when null). */
function sessionPrincipal(
  session: ResolvedSession,
  found: (Membership & { ssoRequired?: boolean }) | null,
): ControlPlanePrincipal {
  const member = found?.ssoRequired ? null : found
  return {
    ssoRequiredOrgId: found?.ssoRequired ? found.orgId : null,
    credential: 'session',
    user: session.user,
    session: {
      id: session.id,
      expiresAt: session.expiresAt,
      activeOrgId: member?.orgId ?? null,
      ssoOrgId: session.ssoOrgId ?? null,
    },
    apiKeyId: null,
    org: member ? { id: member.orgId, name: member.orgName, memberId: member.memberId, role: member.role } : null,
    oauth: null,
  }
}

/**
 * Authenticates the caller from headers; null rule kinds never reach here. A session is answered
 * without a promise when nothing on its way waits (see core/maybe-promise.ts).
 */
function identify(deps: Deps, request: Request, apiKeyAsBearer = false): MaybePromise<ControlPlanePrincipal> {
  const apiKey = request.headers.get('x-api-key')
  const headerOrg = request.headers.get(ORG_HEADER)
  const token = bearerToken(request)
  if (token?.startsWith(API_KEY_PREFIX)) {
    if (apiKeyAsBearer && apiKey === null) return identifyApiKey(deps, token, headerOrg)
    throw errors.unauthorized('API keys are sent in the x-api-key header, not as a bearer token')
  }
  if (apiKey !== null) {
    // A generated client configured with one token sends it under every declared scheme: with a
    // bearer token present, the API key header is the credential only when it is a valid key.
    if (!token) return identifyApiKey(deps, apiKey.trim(), headerOrg)
    if (apiKey.trim().startsWith(API_KEY_PREFIX)) {
      return resolveApiKey(deps, apiKey.trim()).then((resolved) =>
        'rejected' in resolved ? identifyBearer(deps, token, headerOrg) : apiKeyPrincipal(resolved, headerOrg),
      )
    }
    return identifyBearer(deps, token, headerOrg)
  }
  if (!token) throw errors.unauthorized('Send Authorization: Bearer <session-token> or x-api-key: <key>')
  return identifyBearer(deps, token, headerOrg)
}

/** A bearer token that is not an API key: an OAuth access token or a session token. */
function identifyBearer(deps: Deps, token: string, headerOrg: string | null): MaybePromise<ControlPlanePrincipal> {
  if (token.startsWith(ACCESS_TOKEN_PREFIX)) return identifyOAuth(deps, token, headerOrg)
  if (token.startsWith(REFRESH_TOKEN_PREFIX))
    throw errors.unauthorized('A refresh token is exchanged at POST /oauth/token, not sent as a bearer token')
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

/** A Worker's runtime by its current activity token; 401 for a revoked or unknown one. */
async function identifyWorker(deps: Deps, token: string): Promise<ControlPlanePrincipal> {
  const worker = await resolveWorkerToken(deps.db, token)
  if (!worker) throw errors.unauthorized('Invalid or revoked Worker activity token')
  return { credential: 'worker', user: null, session: null, apiKeyId: null, org: null, oauth: null, worker }
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
    oauth: null,
  }
}

async function identifyOAuth(deps: Deps, token: string, headerOrg: string | null): Promise<ControlPlanePrincipal> {
  const resolved = await resolveOAuthToken(deps, token)
  if ('rejected' in resolved) {
    throw errors.unauthorized(
      resolved.rejected === 'unknown' ? 'Invalid OAuth access token' : `OAuth access token ${resolved.rejected}`,
    )
  }
  // A token is bound to the organization chosen at approval.
  if (headerOrg !== null && headerOrg !== resolved.orgId) throw notFoundOrg()
  return {
    credential: 'oauth',
    user: toUserView(resolved.user),
    session: null,
    apiKeyId: null,
    org: { id: resolved.orgId, name: resolved.orgName, memberId: resolved.memberId, role: resolved.role },
    oauth: {
      tokenId: resolved.grantId,
      clientId: resolved.clientId,
      scopes: resolved.scopes,
      resource: resolved.resource,
      expiresAt: resolved.expiresAt,
    },
  }
}

/**
 * An identity provider by the organization's SCIM token. Refusals are in SCIM's error format with
 * the RFC 6750 challenge; no other credential is accepted on these routes.
 */
async function identifyScim(deps: Deps, request: Request): Promise<ControlPlanePrincipal> {
  const token = bearerToken(request)
  const resolved = token ? await resolveScimToken(deps, token) : null
  if (!resolved)
    throw scimStatusError(
      401,
      token ? 'Invalid or revoked SCIM token' : "Send Authorization: Bearer <the organization's SCIM token>",
      { 'www-authenticate': 'Bearer realm="scim"' },
    )
  return { credential: 'scim', user: null, session: null, apiKeyId: null, org: null, oauth: null, scim: resolved }
}

/** 403 for an OAuth token whose scopes do not reach the route. */
function insufficientScope(needed: readonly OAuthScope[] | undefined, granted: readonly OAuthScope[]) {
  return controlPlaneError(
    'insufficient_scope',
    needed && needed.length > 0
      ? `This OAuth token's scopes do not allow this; needs one of: ${needed.join(', ')}`
      : 'OAuth tokens cannot use this route; use a signed-in session or an API key',
    { details: { required: [...(needed ?? [])], granted: [...granted] } },
  )
}

/** The scopes that reach an org route: the route's own list, else its permission's. */
function routeScopes(permission: Permission, own: readonly OAuthScope[] | undefined): readonly OAuthScope[] {
  return own ?? (POLICY[permission] as PermissionPolicy).scopes ?? []
}

/** A 401 `unauthorized` with `WWW-Authenticate: challenge` added (other errors pass unchanged). */
function withChallenge(error: unknown, challenge: string): unknown {
  if (!(error instanceof ApiError) || error.code !== 'unauthorized') return error
  return new ApiError(401, 'unauthorized', error.message, { headers: { 'www-authenticate': challenge } })
}

/** The control plane's authenticator over its domain dependencies. */
export function controlPlaneAuth(deps: Deps): SurfaceAuth<ControlPlaneRule, ControlPlanePrincipal> {
  const authorize = (
    principal: ControlPlanePrincipal,
    rule: Extract<ControlPlaneRule, { kind: 'identity' | 'org' }>,
  ): ControlPlanePrincipal => {
    // The audit log names who was refused as well as who acted.
    noteAuditPrincipal(principal)
    if (rule.kind === 'identity') {
      if (rule.sessionOnly && principal.credential !== 'session')
        throw controlPlaneError(
          'session_required',
          `This action needs a signed-in session, not ${principal.credential === 'oauth' ? 'an OAuth token' : 'an API key'}`,
        )
      if (principal.oauth && !scopesCover(rule.oauthScopes, principal.oauth.scopes))
        throw insufficientScope(rule.oauthScopes, principal.oauth.scopes)
      return principal
    }
    if (!principal.org && principal.ssoRequiredOrgId) throw ssoRequiredError(principal.ssoRequiredOrgId)
    if (!principal.org)
      throw controlPlaneError(
        'no_organization',
        'You are not a member of any organization; create one or accept an invitation',
      )
    const scopes = principal.oauth?.scopes ?? []
    if (principal.oauth && !scopesCover(routeScopes(rule.permission, rule.oauthScopes), scopes))
      throw insufficientScope(routeScopes(rule.permission, rule.oauthScopes), scopes)
    if (
      !allows(rule.permission, principal.org.role, principal.credential as CredentialKind, scopes, rule.oauthScopes)
    ) {
      throw controlPlaneError('forbidden', `Not allowed: needs ${rule.permission}`, {
        details: { permission: rule.permission, role: principal.org.role, credential: principal.credential },
      })
    }
    return principal
  }
  /** Identifies and authorizes, answering a 401 with the route's challenge. */
  const challenged = async (
    challenge: string,
    identifyCaller: () => MaybePromise<ControlPlanePrincipal>,
    rule: Extract<ControlPlaneRule, { kind: 'org' }>,
  ): Promise<ControlPlanePrincipal> => {
    try {
      return authorize(await identifyCaller(), rule)
    } catch (error) {
      throw withChallenge(error, challenge)
    }
  }
  return {
    authenticate(request, rule) {
      // Public routes answer without a promise: /health is polled far more often than anything else.
      if (rule.kind === 'public') return anonymous
      // The Worker heartbeat checks its activity token against the Worker in the path itself.
      if (rule.kind === 'workerToken') return anonymous
      if (rule.kind === 'scim') return identifyScim(deps, request)
      if (rule.kind === 'org' && rule.worker) {
        const token = bearerToken(request)
        if (token?.startsWith(WORKER_ACTIVITY_PREFIX)) return identifyWorker(deps, token)
      }
      if (rule.kind === 'org' && rule.challenge)
        return challenged(rule.challenge(request), () => identify(deps, request, rule.apiKeyAsBearer), rule)
      return andThen(identify(deps, request), (principal) => authorize(principal, rule))
    },
    security(rule): Array<Record<string, string[]>> {
      if (rule.kind === 'public') return []
      if (rule.kind === 'workerToken') return [{ workerActivityToken: [] }]
      if (rule.kind === 'scim') return [{ scimToken: [] }]
      if (rule.kind === 'identity' && rule.sessionOnly) return [{ bearerSession: [] }]
      const scopes =
        rule.kind === 'identity' ? (rule.oauthScopes ?? []) : routeScopes(rule.permission, rule.oauthScopes)
      // The OAuth token is listed with the scopes, any one of which reaches the operation.
      const oauth = scopes.length > 0 ? [{ oauthToken: [...scopes] }] : []
      const worker = rule.kind === 'org' && rule.worker ? [{ workerActivityToken: [] }] : []
      if (rule.kind === 'org' && !POLICY[rule.permission].apiKey) return [{ bearerSession: [] }, ...oauth, ...worker]
      return [{ bearerSession: [] }, { apiKey: [] }, ...oauth, ...worker]
    },
    statuses(rule) {
      if (rule.kind === 'public') return []
      if (rule.kind === 'workerToken' || rule.kind === 'scim') return [401]
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
    description:
      "A Worker runtime's activity token (prefix wka_), accepted on that Worker's heartbeat route, and on `GET /v1/me/delivery` and `GET /v1/events`, where it answers for that Worker.",
  },
  apiKey: {
    type: 'apiKey',
    in: 'header',
    name: 'x-api-key',
    description: 'Organization API key (prefix svc_); acts as the member who created it, in that organization.',
  },
  scimToken: {
    type: 'http',
    scheme: 'bearer',
    description:
      "An organization's SCIM provisioning token (prefix scim_; the owner creates it at POST /v1/org/scim-tokens), accepted on the /scim/v2 routes only, where it acts for that organization.",
  },
  oauthToken: {
    type: 'http',
    scheme: 'bearer',
    description:
      "OAuth access token (prefix oat_) from this server's authorization server (`GET /.well-known/oauth-authorization-server`: device authorization grant, authorization code with PKCE S256, refresh). It acts as the approving member, in the organization chosen at approval, with that member's role narrowed to its scopes; the scopes listed on an operation are the ones (any one) that reach it, and a token without them is refused with 403 `insufficient_scope`.",
  },
}

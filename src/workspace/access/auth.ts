/**
 * Who may call a workspace route: the auth rule each route declares, and the authenticator that
 * turns request headers into a {@link Principal}.
 *
 * Rules are data so the OpenAPI document and the authorization-matrix test derive from the same
 * declarations the router enforces.
 * @module
 */
import { bearerToken } from '../../core/bearer-token.ts'
import { ApiError, errors } from '../../core/errors.ts'
import type { SurfaceAuth } from '../../core/http-app.ts'
import { peerAddress } from '../../core/peer-address.ts'
import { bytesEqual, secretsEqual } from '../../core/secrets.ts'
import type { AuthThrottle } from './auth-throttle.ts'
import { scopeRank, type Scope } from './scopes.ts'
import type { TokenStore } from './token-store.ts'
import { workspaceError } from '../workspace-errors.ts'

/** A route's auth rule. */
export type WorkspaceRule =
  | { kind: 'none' }
  /** A bearer token with at least `scope`. */
  | { kind: 'client'; scope: Scope }
  /** The host token header, or an owner-scoped bearer. */
  | { kind: 'host' }

/** Shorthands used in route declarations. */
export const rules = {
  none: { kind: 'none' } as WorkspaceRule,
  viewer: { kind: 'client', scope: 'viewer' } as WorkspaceRule,
  collaborator: { kind: 'client', scope: 'collaborator' } as WorkspaceRule,
  owner: { kind: 'client', scope: 'owner' } as WorkspaceRule,
  host: { kind: 'host' } as WorkspaceRule,
}

/** The authenticated caller. */
export interface Principal {
  type: 'anonymous' | 'remote' | 'host'
  scope: Scope | null
  /** Id of an issued token (absent for the configured client token and the host token). */
  tokenId?: string
  /** sha256 of the presented credential; binds file sessions and appears in audit entries. */
  tokenHash?: string
  /** Optional `X-Service-Client-Id` the caller sent, for audit context. */
  clientId?: string
}

/** The header carrying the host token. */
export const HOST_TOKEN_HEADER = 'x-service-host-token'

// The console's sign-out route reads the session it ends the way every route reads its caller.
export { bearerToken }

/** Resolves a credential to a principal; the token store plugs in here. */
export interface CredentialResolver {
  /** The principal for a bearer token, or null when unknown, revoked or expired. */
  resolveBearer(token: string): Principal | null | Promise<Principal | null>
  /** True when `token` is the host token. */
  isHostToken(token: string): boolean
}

/** A resolver for the two configured tokens only. */
export function configuredTokens(
  config: { token: string; hostToken: string },
  hash: (token: string) => string,
): CredentialResolver {
  return {
    resolveBearer: (token) =>
      secretsEqual(token, config.token) ? { type: 'remote', scope: 'collaborator', tokenHash: hash(token) } : null,
    isHostToken: (token) => secretsEqual(token, config.hostToken),
  }
}

/**
 * The configured tokens plus the issued-token store. An expired issued token is refused with its
 * own message so a client can tell "renew" from "wrong token".
 */
export function storeTokens(
  config: { token: string; hostToken: string },
  store: TokenStore,
  hash: (token: string) => string,
): CredentialResolver {
  const configured = configuredTokens(config, hash)
  // Hashing the presented token once serves the store lookup, the configured-token comparison
  // (constant time over equal-length digests, as secretsEqual does) and the principal's tokenHash.
  const clientDigestHex = hash(config.token)
  const clientDigest = Buffer.from(clientDigestHex, 'hex')
  // sha256 is the largest fixed cost of an authenticated read, so digests of tokens that proved
  // valid are remembered (bounded). Unknown values are always hashed, so guesses gain nothing, and
  // the store is still consulted by digest on every request, so revocation and expiry apply at once.
  const known = new Map<string, string>()
  const remember = (token: string, digest: string) => {
    if (known.size >= 1024) known.delete(known.keys().next().value!)
    known.set(token, digest)
  }
  return {
    resolveBearer(token) {
      const cached = known.get(token)
      const digest = cached ?? hash(token)
      const found = store.lookupHash(digest)
      if (found.status === 'valid') {
        if (!cached) remember(token, digest)
        return { type: 'remote', scope: found.token.scope, tokenId: found.token.id, tokenHash: digest }
      }
      if (found.status === 'expired') {
        known.delete(token)
        throw errors.unauthorized('Token expired')
      }
      // A cached digest already proved valid once, so comparing it leaks nothing; fresh values are
      // compared in constant time.
      const isClient =
        cached !== undefined ? cached === clientDigestHex : bytesEqual(Buffer.from(digest, 'hex'), clientDigest)
      if (isClient) {
        if (!cached) remember(token, digest)
        return { type: 'remote', scope: 'collaborator', tokenHash: digest }
      }
      known.delete(token)
      return null
    },
    isHostToken: configured.isHostToken,
  }
}

const ANONYMOUS: Principal = Object.freeze({ type: 'anonymous', scope: null }) as Principal

/** Builds the workspace surface's authenticator from a credential resolver, optionally throttled per address. */
export function workspaceAuth(
  resolver: CredentialResolver,
  throttle?: AuthThrottle,
): SurfaceAuth<WorkspaceRule, Principal> {
  const inner = baseAuth(resolver)
  if (!throttle) return inner
  return {
    ...inner,
    // Synchronous unless the credential lookup is asynchronous: most requests resolve without a tick.
    authenticate(request, rule) {
      if (rule.kind === 'none') return ANONYMOUS
      if (throttle.anyLocked()) {
        const wait = throttle.retryAfter(peerAddress(request))
        if (wait > 0) throw errors.tooManyRequests(wait, 'Too many failed authentication attempts')
      }
      const countFailure = (error: unknown): never => {
        if (error instanceof ApiError && error.status === 401) throttle.fail(peerAddress(request))
        throw error
      }
      try {
        const result = inner.authenticate(request, rule)
        return result instanceof Promise ? result.catch(countFailure) : result
      } catch (error) {
        return countFailure(error)
      }
    },
  }
}

function checkScope(principal: Principal | null, rule: WorkspaceRule, clientId: string | undefined): Principal {
  if (rule.kind === 'host') {
    if (!principal) throw errors.unauthorized('Invalid host token')
    if (principal.scope !== 'owner')
      throw workspaceError('forbidden', 'Host routes need the host token or an owner token', {
        details: {
          required: 'owner',
          scope: principal.scope,
        },
      })
    return { ...principal, clientId }
  }
  if (!principal) throw errors.unauthorized('Invalid bearer token')
  if (rule.kind === 'client' && scopeRank(principal.scope) < scopeRank(rule.scope)) {
    throw workspaceError('forbidden', 'Insufficient token scope', {
      details: { required: rule.scope, scope: principal.scope },
    })
  }
  return { ...principal, clientId }
}

function baseAuth(resolver: CredentialResolver): SurfaceAuth<WorkspaceRule, Principal> {
  return {
    authenticate(request, rule) {
      if (rule.kind === 'none') return ANONYMOUS
      const clientId = request.headers.get('x-service-client-id')?.slice(0, 128) || undefined
      if (rule.kind === 'host') {
        const hostToken = request.headers.get(HOST_TOKEN_HEADER)
        if (hostToken && resolver.isHostToken(hostToken)) return { type: 'host', scope: 'owner', clientId }
      }
      const bearer = bearerToken(request)
      const principal = bearer ? resolver.resolveBearer(bearer) : null
      return principal instanceof Promise
        ? principal.then((p) => checkScope(p, rule, clientId))
        : checkScope(principal, rule, clientId)
    },
    security(rule): Array<Record<string, string[]>> {
      if (rule.kind === 'none') return []
      if (rule.kind === 'host') return [{ hostToken: [] }, { bearerToken: ['owner'] }]
      return [{ bearerToken: [rule.scope] }]
    },
    statuses(rule) {
      if (rule.kind === 'none') return []
      return rule.kind === 'client' && rule.scope === 'viewer' ? [401, 429] : [401, 403, 429]
    },
  }
}

/** OpenAPI security schemes of the workspace surface. */
export const workspaceSecuritySchemes = {
  bearerToken: {
    type: 'http',
    scheme: 'bearer',
    description:
      'Client token (configured token = collaborator) or an issued token with scope owner, collaborator or viewer.',
  },
  hostToken: {
    type: 'apiKey',
    in: 'header',
    name: 'X-Service-Host-Token',
    description: 'The host token; grants owner scope on host routes.',
  },
}

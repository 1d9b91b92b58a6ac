/**
 * Rate limits per credential, as a layer over the control plane's authenticator: once a request's
 * credential is known (a session, an API key, an OAuth grant, a Worker), one token is taken from
 * that credential's bucket; an empty bucket is 429 `rate_limited` with `Retry-After`, before the
 * handler runs. Every response to an identified caller carries the IETF RateLimit fields
 * (draft-ietf-httpapi-ratelimit-headers, structured-field form):
 *
 *     RateLimit-Policy: "credential";q=<burst>;w=<seconds to refill the burst>
 *     RateLimit: "credential";r=<requests left>;t=<seconds until full again>
 *
 * Public routes (`/health`, `/ready`, `/metrics`, `/openapi.json`, the console's files, sign-in)
 * and the Worker heartbeat (authenticated by its handler, on a fixed cadence; refusing it would
 * make a healthy Worker look dead) take no token. A credential that fails to authenticate takes
 * none either: the sign-in throttle covers guessing.
 * @module
 */
import { controlPlaneError } from '../control-plane-errors.ts'
import type { SurfaceAuth } from '../../core/surface-auth.ts'
import type { ControlPlanePrincipal } from '../auth.ts'
import type { ControlPlaneRule } from '../policy.ts'
import type { CredentialRateLimiter, RateDecision } from './credential-rate-limiter.ts'

/** The policy's name in the RateLimit fields. */
const POLICY_NAME = '"credential"'

/** Refusals by credential kind, for `service_rate_limited_requests_total`. */
export type RefusalCounts = Record<'session' | 'apiKey' | 'oauth' | 'worker', number>

/** The bucket key of an identified caller, or null for an anonymous one (never limited). */
function bucketKey(principal: ControlPlanePrincipal): string | null {
  switch (principal.credential) {
    case 'session':
      return principal.session ? `s:${principal.session.id}` : null
    case 'apiKey':
      return principal.apiKeyId ? `k:${principal.apiKeyId}` : null
    case 'oauth':
      // The grant, stable across refreshes: refreshing a token does not refill its bucket.
      return principal.oauth ? `o:${principal.oauth.tokenId}` : null
    case 'worker':
      return principal.worker ? `w:${principal.worker.id}` : null
    default:
      return null
  }
}

/** Wraps `auth` so identified callers are limited per credential by `limiter`. */
export function rateLimitedAuth(
  auth: SurfaceAuth<ControlPlaneRule, ControlPlanePrincipal>,
  limiter: CredentialRateLimiter,
  settings: { ratePerSecond: number; burst: number },
): { auth: SurfaceAuth<ControlPlaneRule, ControlPlanePrincipal>; refused: RefusalCounts } {
  const refused: RefusalCounts = { session: 0, apiKey: 0, oauth: 0, worker: 0 }
  const policy = `${POLICY_NAME};q=${settings.burst};w=${Math.max(1, Math.ceil(settings.burst / settings.ratePerSecond))}`
  // The decision travels from authentication to the response beside the principal (built per request).
  const decisions = new WeakMap<ControlPlanePrincipal, RateDecision>()
  const field = (d: RateDecision) => `${POLICY_NAME};r=${d.remaining};t=${d.resetSeconds}`

  const admit = (principal: ControlPlanePrincipal): ControlPlanePrincipal => {
    const key = bucketKey(principal)
    if (key === null) return principal
    const decision = limiter.take(key)
    if (!decision.allowed) {
      refused[principal.credential as keyof RefusalCounts]++
      throw controlPlaneError(
        'rate_limited',
        `Too many requests with this credential; retry in ${decision.retryAfterSeconds} s`,
        {
          details: { retryAfterSeconds: decision.retryAfterSeconds },
          headers: {
            'retry-after': String(decision.retryAfterSeconds),
            'ratelimit-policy': policy,
            ratelimit: field(decision),
          },
        },
      )
    }
    decisions.set(principal, decision)
    return principal
  }

  return {
    refused,
    auth: {
      authenticate(request, rule) {
        const principal = auth.authenticate(request, rule)
        if (rule.kind === 'public' || rule.kind === 'workerToken') return principal
        return principal instanceof Promise ? principal.then(admit) : admit(principal)
      },
      security: (rule) => auth.security(rule),
      statuses(rule) {
        const statuses = auth.statuses(rule)
        return rule.kind === 'public' || rule.kind === 'workerToken' ? statuses : [...statuses, 429]
      },
      finish(principal, response) {
        const decision = decisions.get(principal)
        if (decision === undefined) return response
        try {
          response.headers.set('ratelimit-policy', policy)
          response.headers.set('ratelimit', field(decision))
          return response
        } catch {
          // A response with immutable headers (one passed through from fetch) is copied once.
          const copy = new Response(response.body, response)
          copy.headers.set('ratelimit-policy', policy)
          copy.headers.set('ratelimit', field(decision))
          return copy
        }
      },
    },
  }
}

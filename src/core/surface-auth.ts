/**
 * How a surface authenticates requests and documents that: the one seam between the shared HTTP
 * pipeline and a surface's credentials and policy.
 * @module
 */
import { isRawBody, type AnyRoute } from './route.ts'
import type { ValidationPolicy } from './validation.ts'

/** How a surface authenticates requests and documents that. */
export interface SurfaceAuth<Rule, Principal> {
  /**
   * Resolves the caller for a route's rule, or throws an ApiError (401/403/429). Answer
   * synchronously when no lookup is needed (public routes): a promise costs every such request.
   */
  authenticate(request: Request, rule: Rule): Principal | Promise<Principal>
  /** OpenAPI security requirements for a rule; `[]` means public. */
  security(rule: Rule): Array<Record<string, string[]>>
  /** Error statuses a rule can produce, documented on every route that uses it. */
  statuses(rule: Rule): number[]
  /**
   * Completes the response of a request `principal` made (e.g. the control plane's RateLimit
   * headers), whatever the route answered; absent: responses pass unchanged.
   */
  finish?(principal: Principal, response: Response): Response
}

/** The documented error statuses for a route: its own plus those implied by auth, inputs and 500. */
export function impliedErrorStatuses<Rule>(
  route: AnyRoute<Rule>,
  auth: SurfaceAuth<Rule, unknown>,
  validation: ValidationPolicy,
): number[] {
  const statuses = new Set<number>(route.errors ?? [])
  for (const s of auth.statuses(route.auth)) statuses.add(s)
  if (route.body && !isRawBody(route.body)) {
    statuses.add(400)
    statuses.add(validation.status)
    statuses.add(413)
  }
  // The listener's guard (request-guard.ts) answers before routing: 408 `request_timeout` when a
  // body stops arriving, 503 `server_busy` over the request caps (never for /health).
  if (route.body) statuses.add(408)
  if (route.path !== '/health') statuses.add(503)
  if (route.query) statuses.add(validation.status)
  if (route.path.includes(':')) statuses.add(404)
  statuses.add(500)
  for (const s of Object.keys(route.responses).map(Number)) statuses.delete(s)
  return [...statuses].sort((a, b) => a - b)
}

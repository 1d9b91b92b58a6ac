/**
 * Two auth rules only the sidecar routes use, and the wrapper that gives them their meaning.
 *
 * `UNLISTED_RULE` guards the fallback for routes not on the allow-list: the host passes (owner token
 * or host token, as any host route), and anyone else is refused with the specific 403
 * `sidecar_route_not_allowed` rather than a generic scope error, so a client can tell "this route is
 * never proxied for you" from "your token is too weak for this route". `TICKET_RULE` guards WebSocket
 * routes: a collaborator bearer token, or a single-use ticket in `?ticket=` for browsers.
 * The rules are recognised by identity, so no other route can pick them up by accident.
 * @module
 */
import { ApiError } from '../../core/errors.ts'
import type { SurfaceAuth } from '../../core/http-app.ts'
import type { Principal, WorkspaceRule } from '../access/auth.ts'
import { routeNotAllowed } from './route-policy.ts'
import type { SocketTickets } from './socket-tickets.ts'
import { workspaceError } from '../workspace-errors.ts'

/** The rule of the host-only fallback routes. */
export const UNLISTED_RULE: WorkspaceRule = Object.freeze({ kind: 'host' }) as WorkspaceRule
/** The rule of relayed WebSocket routes. */
export const TICKET_RULE: WorkspaceRule = Object.freeze({ kind: 'client', scope: 'collaborator' }) as WorkspaceRule

/** OpenAPI security scheme of the ticket (merge into the surface's schemes). */
export const sidecarSecuritySchemes = {
  sidecarTicket: {
    type: 'apiKey',
    in: 'query',
    name: 'ticket',
    description:
      'Single-use WebSocket ticket from the PTY connect-token route of the same mount (valid 30 s, bound to one path).',
  },
}

/** Where a ticketed request points: its workspace and the proxied path. */
export type MountOf = (pathname: string) => { workspaceId: string; path: string } | null

/** Wraps the surface's auth so the two sidecar rules behave as documented above. */
export function sidecarAuth(
  inner: SurfaceAuth<WorkspaceRule, Principal>,
  deps: { tickets: SocketTickets; mountOf: MountOf },
): SurfaceAuth<WorkspaceRule, Principal> {
  const unlisted =
    (request: Request) =>
    (error: unknown): never => {
      if (error instanceof ApiError && error.status === 403) {
        const { pathname } = new URL(request.url)
        const scope = (error.details as { scope?: string | null } | undefined)?.scope ?? null
        throw routeNotAllowed(request.method, deps.mountOf(pathname)?.path ?? pathname, scope)
      }
      throw error
    }
  return {
    authenticate(request, rule) {
      if (rule === UNLISTED_RULE) {
        try {
          const result = inner.authenticate(request, rule)
          return result instanceof Promise ? result.catch(unlisted(request)) : result
        } catch (error) {
          return unlisted(request)(error)
        }
      }
      if (rule === TICKET_RULE) {
        const url = new URL(request.url)
        const ticket = url.searchParams.get('ticket')
        if (ticket !== null) {
          const mount = deps.mountOf(url.pathname)
          const principal = mount ? deps.tickets.consume(ticket, mount.workspaceId, mount.path) : null
          if (!principal)
            throw workspaceError('sidecar_ticket_invalid', 'The WebSocket ticket is unknown, used or expired')
          return principal
        }
      }
      return inner.authenticate(request, rule)
    },
    security(rule) {
      if (rule === TICKET_RULE) return [...inner.security(rule), { sidecarTicket: [] }]
      return inner.security(rule)
    },
    statuses: (rule) => inner.statuses(rule),
  }
}

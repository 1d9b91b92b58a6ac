/**
 * The control plane's audit seam: every POST, PUT, PATCH and DELETE that matches a declared route
 * runs inside a {@link RequestAudit}, whatever module declared the route (routes added later are
 * covered without doing anything). The origin is derived here, once, from the path and the client:
 * `/scim/` → scim, `/v1/sso/` → sso, `/mcp` → mcp, the console (its API client sends
 * `X-Service-Client: console`) → console, anything else → api.
 * @module
 */
import type { Logger } from '../../core/logger.ts'
import type { PeerLookup } from '../../core/peer-address.ts'
import { nextRequestId, SAFE_REQUEST_ID } from '../../core/request-id.ts'
import type { AnyRoute } from '../../core/route.ts'
import type { RouteTable } from '../../core/router.ts'
import type { SurfaceAuth } from '../../core/surface-auth.ts'
import { observeCommits } from '../../storage/transaction-scope.ts'
import type { Deps } from '../deps.ts'
import { noteAuditPrincipal, RequestAudit, type AuditOrigin, type PrincipalFacts } from './request-audit.ts'

/** The header the console's API client sends on every call. */
export const CLIENT_HEADER = 'x-service-client'

/**
 * Routes whose successful requests are not events of their own: a Worker's heartbeat (every few
 * seconds, no administrative change) and MCP messages (a write tool records its own event, with
 * origin mcp; reads and the session handshake are not changes). Their failures are recorded.
 */
const QUIET_ON_SUCCESS = new Set(['POST /v1/workers/:workerId/heartbeat', 'POST /mcp'])

/**
 * GET routes that change state and are audited like writes: the single sign-on callback signs a
 * person in (and may make them a member). It answers refusals with a redirect whose fragment
 * names the error (`#sso_error=<code>`), which is read as the outcome.
 */
export const AUDITED_READS = new Set(['GET /v1/sso/:orgSlug/callback'])

/** Only paths under these prefixes are looked up for {@link AUDITED_READS} (a GET costs nothing else). */
const AUDITED_READ_PREFIXES = ['/v1/sso/']

/** Path parameters whose values are never recorded. */
const SECRET_PARAM = /secret|token|code|password/i

const WRITES = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

type Fetch = (request: Request, peer?: PeerLookup) => Response | Promise<Response>

/** Where a request came from (see the module comment). */
export function originOf(pathname: string, request: Request): AuditOrigin {
  if (pathname.startsWith('/scim/')) return 'scim'
  if (pathname.startsWith('/v1/sso/')) return 'sso'
  if (pathname === '/mcp' || pathname.startsWith('/mcp/')) return 'mcp'
  if (request.headers.get(CLIENT_HEADER) === 'console') return 'console'
  return 'api'
}

/** The resource a route acts on: the literal segment before its last parameter, and that parameter. */
export function targetOf(path: string, params: Record<string, string> | null): { type: string; id: string } {
  const segments = path.split('/').filter((s) => s !== '')
  for (let i = segments.length - 1; i >= 0; i--) {
    const segment = segments[i]!
    if (!segment.startsWith(':')) continue
    const name = segment.slice(1).replace(/[+?*]$/, '')
    let value = params?.[name] ?? ''
    try {
      value = decodeURIComponent(value)
    } catch {
      // Recorded as sent.
    }
    const type =
      segments
        .slice(0, i)
        .reverse()
        .find((s) => !s.startsWith(':')) ?? 'resource'
    return { type, id: SECRET_PARAM.test(name) ? '[redacted]' : value.slice(0, 200) }
  }
  return { type: segments.at(-1) ?? '', id: '' }
}

/** The error code a redirect names in its fragment (`#sso_error=<code>`), or null. */
function redirectedRefusal(response: Response): string | null {
  if (response.status < 300) return null
  const found = /[#&]sso_error=([a-z0-9_.-]{1,64})/i.exec(response.headers.get('location') ?? '')
  return found ? found[1]! : null
}

/** The answer's stable error code, read from its JSON body (`code`, or OAuth's `error`). */
async function errorCodeOf(response: Response): Promise<string | null> {
  if (!(response.headers.get('content-type') ?? '').includes('json')) return null
  try {
    const body = (await response.clone().json()) as { code?: unknown; error?: unknown; scimType?: unknown }
    // Our `code`, OAuth's `error`, SCIM's `scimType` (RFC 7644 §3.12).
    const found = [body.code, body.error, body.scimType].find((value) => typeof value === 'string')
    const code = typeof found === 'string' ? found : null
    return code && /^[a-z0-9_.-]{1,64}$/i.test(code) ? code : null
  } catch {
    return null
  }
}

/** Makes the surface's authentication tell the request's audit who the caller is. */
export function auditedAuth<Rule, Principal extends PrincipalFacts>(
  auth: SurfaceAuth<Rule, Principal>,
): SurfaceAuth<Rule, Principal> {
  return {
    ...auth,
    authenticate(request, rule) {
      const principal = auth.authenticate(request, rule)
      if (principal instanceof Promise)
        return principal.then((p) => {
          noteAuditPrincipal(p)
          return p
        })
      noteAuditPrincipal(principal)
      return principal
    },
  }
}

/** What {@link auditedFetch} needs. */
export interface AuditedFetchOptions {
  deps: Deps
  table: RouteTable
  logger: Logger
}

/** Wraps the surface's Fetch handler so each write request is audited once (see the module comment). */
export function auditedFetch(fetch: Fetch, options: AuditedFetchOptions): Fetch {
  const { deps, table, logger } = options
  return (incoming, peer) => {
    const write = WRITES.has(incoming.method)
    if (!write && !(incoming.method === 'GET' && AUDITED_READ_PREFIXES.some((p) => incoming.url.includes(p))))
      return fetch(incoming, peer)
    let pathname: string
    try {
      pathname = new URL(incoming.url).pathname
    } catch {
      return fetch(incoming, peer)
    }
    const match = table.match(incoming.method, pathname)
    if (!match) return fetch(incoming, peer)
    const route = match.route as AnyRoute
    if (!write && !AUDITED_READS.has(`${route.method} ${route.path}`)) return fetch(incoming, peer)
    let request = incoming
    let requestId = incoming.headers.get('x-request-id')
    if (!requestId || !SAFE_REQUEST_ID.test(requestId)) {
      // The event and the response must name the same id, so it is fixed here.
      requestId = nextRequestId()
      try {
        incoming.headers.set('x-request-id', requestId)
      } catch {
        // Immutable headers (Deno's incoming requests): a copy carries the id.
        const headers = new Headers(incoming.headers)
        headers.set('x-request-id', requestId)
        request = new Request(incoming, { headers })
      }
    }
    const template = `${route.method} ${route.path}`
    const audit = new RequestAudit(
      deps,
      {
        requestId,
        route: template,
        action: route.operationId,
        target: targetOf(route.path, match.params),
        origin: originOf(pathname, request),
      },
      QUIET_ON_SUCCESS.has(template),
    )
    // Public routes (sign-in, OAuth endpoints) and a Worker's token, checked by its handler, have no
    // verified caller before the handler runs: their refusals are recorded anonymously.
    const kind = (route.auth as { kind?: string }).kind
    const anonymousAllowed = kind === 'public' || kind === 'workerToken'
    const done = async (response: Response): Promise<Response> => {
      const refusal = response.status < 400 ? redirectedRefusal(response) : null
      // A redirect that reports a refusal is a refused request, recorded as denied.
      const status = refusal ? 403 : response.status
      // A caller that never proved who it is leaves no event (anyone could fill the log); refused
      // sign-ins are recorded. A 429 (rate limit, sign-in throttle) is counted by metrics instead:
      // a write per refused request would cost what the limit exists to spare.
      const record = status < 400 || (status !== 429 && (audit.identified || anonymousAllowed))
      try {
        const code = refusal ?? (status >= 400 ? await errorCodeOf(response) : null)
        await audit.finish({ status, code }, record)
      } catch (error) {
        logger.warn('audit event not recorded', { requestId, route: template, error: String(error) })
      }
      return response
    }
    return observeCommits(audit, async () => {
      let response: Response
      try {
        response = await fetch(request, peer)
      } catch (error) {
        audit.ended = true
        throw error
      }
      return done(response)
    })
  }
}

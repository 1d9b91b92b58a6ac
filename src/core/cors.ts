/**
 * The single CORS layer for both surfaces.
 *
 * Default is no cross-origin access at all (the reference defaults to `*`). Only configured origins
 * get CORS headers; a disallowed origin's preflight is refused with 403 and no CORS headers, and
 * allowed preflights are cached by the browser via `Access-Control-Max-Age`.
 * @module
 */

/** CORS settings resolved from configuration. */
export interface CorsPolicy {
  /** Exact origins (`https://app.example`) or `*` to allow any origin. Empty: none. */
  origins: readonly string[]
  allowHeaders: readonly string[]
  exposeHeaders?: readonly string[]
  maxAgeSeconds?: number
}

const METHODS = 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS'

/** The origin value to echo for `origin`, or null when it is not allowed. */
export function allowedOrigin(policy: CorsPolicy, origin: string | null): string | null {
  if (!origin) return null
  if (policy.origins.includes('*')) return '*'
  return policy.origins.includes(origin) ? origin : null
}

/** True for a CORS preflight (an OPTIONS request announcing the real method). */
export function isPreflight(request: Request): boolean {
  return request.method === 'OPTIONS' && request.headers.has('access-control-request-method')
}

/** Answers a preflight: 204 with headers when allowed, 403 without CORS headers otherwise. */
export function preflightResponse(policy: CorsPolicy, request: Request): Response {
  const origin = allowedOrigin(policy, request.headers.get('origin'))
  if (!origin) {
    return new Response(JSON.stringify({ code: 'cors_forbidden', message: 'Origin not allowed' }), {
      status: 403,
      headers: { 'content-type': 'application/json; charset=utf-8', vary: 'Origin' },
    })
  }
  const headers = new Headers({
    'access-control-allow-origin': origin,
    'access-control-allow-methods': METHODS,
    'access-control-allow-headers': policy.allowHeaders.join(', '),
    'access-control-max-age': String(policy.maxAgeSeconds ?? 600),
    vary: 'Origin, Access-Control-Request-Method, Access-Control-Request-Headers',
  })
  return new Response(null, { status: 204, headers })
}

/** Adds CORS headers to an actual response when the request's origin is allowed. */
export function applyCors(policy: CorsPolicy, request: Request, response: Response): Response {
  const origin = allowedOrigin(policy, request.headers.get('origin'))
  if (policy.origins.length > 0 && !policy.origins.includes('*')) appendVary(response.headers, 'Origin')
  if (!origin) return response
  response.headers.set('access-control-allow-origin', origin)
  const expose = ['X-Request-Id', ...(policy.exposeHeaders ?? [])]
  response.headers.set('access-control-expose-headers', expose.join(', '))
  return response
}

function appendVary(headers: Headers, value: string): void {
  const current = headers.get('vary')
  if (!current) headers.set('vary', value)
  else if (
    !current
      .split(',')
      .map((s) => s.trim().toLowerCase())
      .includes(value.toLowerCase())
  )
    headers.set('vary', `${current}, ${value}`)
}

/** Returns a response whose headers can be changed (fetch() responses have immutable headers). */
function writable(response: Response): Response {
  try {
    response.headers.append('vary', 'Origin')
    return response
  } catch {
    return new Response(response.body, response)
  }
}

/**
 * The pipeline's CORS step for a routed response: when the policy allows some origin and the
 * request sent one, the response varies by Origin and carries the CORS headers for an allowed one.
 * Preflights are answered before routing by {@link preflightResponse}.
 */
export function corsStep(policy: CorsPolicy): (request: Request, response: Response) => Response {
  if (policy.origins.length === 0) return (_request, response) => response
  return (request, response) =>
    request.headers.has('origin') ? applyCors(policy, request, writable(response)) : response
}

/**
 * Which headers cross the proxy in each direction.
 *
 * Requests: the client's credentials (`Authorization`, `X-Service-*`, cookies) are ours, never the
 * sidecar's, so they are dropped and the sidecar's own Basic credentials are injected. Responses:
 * this server owns CORS, cookies and framing, so the sidecar's versions of those are dropped (two
 * CORS layers produced duplicate `Access-Control-Allow-Origin` values in the reference).
 * @module
 */

/** Hop-by-hop headers (RFC 9110 §7.6.1) plus the legacy ones proxies must not forward. */
const HOP_BY_HOP = [
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]

/** Request headers that carry the caller's identity or browser context, never forwarded. */
const CLIENT_ONLY = [
  'authorization',
  'cookie',
  'host',
  'origin',
  'referer',
  'content-length',
  'accept-encoding',
  'x-opencode-directory',
  'x-request-id',
]

/**
 * Response headers this server owns or that no longer describe the body: fetch has already
 * decoded any `content-encoding`, so the encoding and length headers would be wrong; the
 * sidecar's `WWW-Authenticate` would make browsers prompt for credentials the client must never see.
 */
const UPSTREAM_ONLY = [
  'content-encoding',
  'content-length',
  'set-cookie',
  'set-cookie2',
  'www-authenticate',
  'vary',
  'x-content-type-options',
]

const REQUEST_DROP = new Set([...HOP_BY_HOP, ...CLIENT_ONLY])
const RESPONSE_DROP = new Set([...HOP_BY_HOP, ...UPSTREAM_ONLY])

/** Headers a `Connection` header names are hop-by-hop too (RFC 9110 §7.6.1). */
function withConnectionNamed(base: Set<string>, headers: Headers): Set<string> {
  const connection = headers.get('connection')
  if (!connection) return base
  const named = connection
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean)
  return named.length ? new Set([...base, ...named]) : base
}

/** The header value OpenCode reads for the directory: non-ASCII is percent-encoded (it URI-decodes it). */
export function directoryHeaderValue(directory: string): string {
  return /^[\x20-\x7e]*$/.test(directory) && !directory.includes('%') ? directory : encodeURIComponent(directory)
}

let lastAuth: { username: string; password: string; value: string } | undefined

/** `Basic base64(user:pass)` for the sidecar, or null when it has no password. */
export function basicAuthorization(username: string, password: string | null): string | null {
  if (password === null) return null
  if (lastAuth && lastAuth.username === username && lastAuth.password === password) return lastAuth.value
  const bytes = new TextEncoder().encode(`${username}:${password}`)
  let binary = ''
  for (const b of bytes) binary += String.fromCharCode(b)
  lastAuth = { username, password, value: `Basic ${btoa(binary)}` }
  return lastAuth.value
}

/** Builds the upstream request headers from the client's. */
export function upstreamRequestHeaders(
  incoming: Headers,
  options: { authorization: string | null; directory: string; requestId?: string },
): Headers {
  const out = new Headers()
  const drop = withConnectionNamed(REQUEST_DROP, incoming)
  for (const [name, value] of incoming) {
    const lower = name.toLowerCase()
    if (drop.has(lower) || lower.startsWith('x-service-') || lower.startsWith('access-control-request-')) continue
    out.append(lower, value)
  }
  if (options.authorization) out.set('authorization', options.authorization)
  out.set('x-opencode-directory', directoryHeaderValue(options.directory))
  if (options.requestId) out.set('x-request-id', options.requestId)
  return out
}

/** Builds the client-facing response headers from the sidecar's. */
export function downstreamResponseHeaders(upstream: Headers): Headers {
  const out = new Headers()
  const drop = withConnectionNamed(RESPONSE_DROP, upstream)
  for (const [name, value] of upstream) {
    const lower = name.toLowerCase()
    if (drop.has(lower) || lower.startsWith('access-control-')) continue
    out.append(lower, value)
  }
  return out
}

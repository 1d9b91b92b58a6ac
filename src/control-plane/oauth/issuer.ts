/**
 * The authorization server's own URL (its issuer, RFC 8414 §2): the configured public URL, else
 * the origin the request reached (behind a trusted proxy, the forwarded one). Verification URIs,
 * the metadata document and resource indicators are built from it.
 * @module
 */
import type { RouteContext } from '../routes/route.ts'

/** The issuer URL for a request, without a trailing slash. */
export function issuerOf(request: Request, ctx: Pick<RouteContext, 'publicUrl' | 'trustProxy'>): string {
  if (ctx.publicUrl) return ctx.publicUrl
  const url = new URL(request.url)
  if (ctx.trustProxy) {
    const host = request.headers.get('x-forwarded-host')?.split(',')[0]?.trim()
    const proto = request.headers.get('x-forwarded-proto')?.split(',')[0]?.trim()
    if (host && /^[A-Za-z0-9.:[\]-]+$/.test(host)) return `${proto === 'https' ? 'https' : 'http'}://${host}`
  }
  return url.origin
}

/** The console page a person opens to approve a device sign-in (the console routes by fragment). */
export function deviceVerificationUri(issuer: string): string {
  return `${issuer}/console/#device`
}

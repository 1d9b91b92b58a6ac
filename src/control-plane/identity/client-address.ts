/**
 * The network address of a request's client, for per-address sign-in throttling.
 *
 * The listener stamps the TCP peer address on every request (`core/peer-address.ts`). Behind a
 * reverse proxy the peer is the proxy, so `trustProxy` makes the first `X-Forwarded-For` entry
 * win instead; without it that header is ignored, because any client can send it.
 * @module
 */
import { peerAddress } from '../../core/peer-address.ts'

/** The client address to throttle on, or null when unknown (in-process calls have no peer). */
export function clientAddress(request: Request, trustProxy: boolean): string | null {
  if (trustProxy) {
    const forwarded = request.headers.get('x-forwarded-for')?.split(',')[0]?.trim()
    if (forwarded) return forwarded.slice(0, 64)
  }
  const peer = peerAddress(request)
  return peer === 'local' || peer === 'unknown' ? null : peer
}

/**
 * The network address of a request's client, for per-address sign-in throttling.
 *
 * A Fetch `Request` does not carry the peer address; Bun passes its server object as the second
 * argument of the fetch handler, whose `requestIP` gives it. The control plane's fetch wrapper
 * records the address here, keyed by the request object, before routing. Behind a reverse proxy
 * the peer is the proxy, so `trustProxy` makes the first `X-Forwarded-For` entry win instead;
 * without it that header is ignored, because any client can send it.
 * @module
 */

const addresses = new WeakMap<Request, string>()

/** The shape of Bun's server argument that we use (absent in-process and on other runtimes). */
interface PeerInfo {
  requestIP?: (request: Request) => { address: string } | null
}

/** Records the peer address of an incoming request. */
export function notePeerAddress(request: Request, server: unknown): void {
  const info = server as PeerInfo | undefined
  const peer = typeof info?.requestIP === 'function' ? info.requestIP(request) : null
  if (peer?.address) addresses.set(request, peer.address)
}

/** The client address to throttle on, or null when unknown. */
export function clientAddress(request: Request, trustProxy: boolean): string | null {
  if (trustProxy) {
    const forwarded = request.headers.get('x-forwarded-for')?.split(',')[0]?.trim()
    if (forwarded) return forwarded.slice(0, 64)
  }
  return addresses.get(request) ?? null
}

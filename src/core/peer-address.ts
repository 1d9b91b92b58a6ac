/**
 * The network address of the caller, carried on the request as a header the listener sets.
 *
 * Why a header: the Fetch handler only receives a `Request`, and http-app may rebuild it (HEAD,
 * mount rewrites), which would drop any side table keyed on the object. The listener in
 * `serve.ts` always overwrites the header, so a client cannot choose its own address.
 * @module
 */

/** Internal header set by the listener; any client-sent value is replaced. */
export const PEER_ADDRESS_HEADER = 'x-service-peer-address'

/** The caller's address, or `local` for in-process calls that did not pass through a listener. */
export function peerAddress(request: Request): string {
  return request.headers.get(PEER_ADDRESS_HEADER) || 'local'
}

/** Stamps `address` onto an incoming request (mutating its headers), replacing any client value. */
export function stampPeerAddress(request: Request, address: string | undefined): Request {
  try {
    request.headers.set(PEER_ADDRESS_HEADER, address || 'unknown')
  } catch {
    return new Request(request, { headers: withHeader(request.headers, address || 'unknown') })
  }
  return request
}

function withHeader(headers: Headers, address: string): Headers {
  const copy = new Headers(headers)
  copy.set(PEER_ADDRESS_HEADER, address)
  return copy
}

/**
 * The network address of the caller, for per-address throttling.
 *
 * The listener hands http-app a lazy lookup for each request, which binds it to the request
 * object it routes (rebuilt or not). Looking the address up only when a throttle asks keeps it off
 * the hot path, and nothing the client sends can choose it.
 * @module
 */

/** Internal header that stands in for a listener in in-process tests only. */
export const PEER_ADDRESS_HEADER = 'x-service-peer-address'

/** A lazy lookup of the peer address, supplied by the listener. */
export type PeerLookup = () => string | undefined

// A symbol-keyed property rather than a WeakMap: binding runs on every request, and a property
// store costs a fraction of a weak-map insert (and its later collection). Symbols are invisible
// to anything that serialises or copies the request.
const PEER = Symbol('service.peer')

/** Binds the listener's lookup to the request object that will be routed. */
export function bindPeer(request: Request, lookup: PeerLookup): void {
  ;(request as unknown as Record<symbol, PeerLookup>)[PEER] = lookup
}

/**
 * The caller's address. With a listener the header is never read (a client could send it); without
 * one (in-process tests) the internal header stands in, else `local`.
 */
export function peerAddress(request: Request): string {
  const lookup = (request as unknown as Record<symbol, PeerLookup | undefined>)[PEER]
  if (lookup) return lookup() || 'unknown'
  return request.headers.get(PEER_ADDRESS_HEADER) || 'local'
}

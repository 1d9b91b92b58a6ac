/**
 * The path a client asked for, kept on a request the HTTP app rewrote (the `/w/:id/...` mount).
 *
 * Why: the rewrite maps mounted URLs onto the shared route table, so a handler only sees the
 * unmounted path; handlers whose resources belong to one workspace (file sessions) need the mount
 * to refuse a resource of another workspace reached through it.
 * @module
 */

// A symbol-keyed property, like the peer lookup: invisible to anything that copies the request.
const REQUESTED = Symbol('service.requestedPath')

/** Records the path the client sent on the request that will be routed. */
export function bindRequestedPath(request: Request, pathname: string): void {
  ;(request as unknown as Record<symbol, string>)[REQUESTED] = pathname
}

/** The path the client sent when the app rewrote it, else undefined (the routed URL is the sent one). */
export function requestedPath(request: Request): string | undefined {
  return (request as unknown as Record<symbol, string | undefined>)[REQUESTED]
}

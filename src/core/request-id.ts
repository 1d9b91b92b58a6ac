/**
 * Request ids: every response carries `X-Request-Id` (the client's when it is a safe token, else a
 * fresh one) and `X-Content-Type-Options: nosniff`.
 * @module
 */
import { randomBytes } from './random-bytes.ts'

/** A client's `X-Request-Id` we pass on: a short token of safe characters. */
export const SAFE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

// A per-process random prefix plus a counter: unique without a random draw per request (the cost
// showed in profiles); same 26-character shape as other ids. The counter runs over
// [36^9, 36^10), where base 36 always has exactly ten digits, so no padding.
const REQUEST_ID_PREFIX = `req_${randomBytes(8).toString('hex')}`
const COUNTER_FLOOR = 101_559_956_668_416 // 36^9
const COUNTER_CEILING = 3_656_158_440_062_976 // 36^10
let requestCounter = COUNTER_FLOOR

/** A fresh request id. */
export function nextRequestId(): string {
  if (++requestCounter >= COUNTER_CEILING) requestCounter = COUNTER_FLOOR
  return REQUEST_ID_PREFIX + requestCounter.toString(36)
}

/** The client's `X-Request-Id` when it is a safe token, else a fresh one. */
export function requestIdOf(request: Request): string {
  const offered = request.headers.get('x-request-id')
  return offered && SAFE_REQUEST_ID.test(offered) ? offered : nextRequestId()
}

/**
 * Gives a response not built by the pipeline (handler-made, errors, the sidecar proxy) the request
 * id and nosniff. Both are checked apart: an upstream that echoes our id must still get nosniff.
 */
export function stampForeign(response: Response, requestId: string): Response {
  const headers = response.headers
  if (headers.get('x-request-id') === requestId && headers.get('x-content-type-options') === 'nosniff') return response
  let out = response
  try {
    headers.set('x-request-id', requestId)
  } catch {
    // fetch() responses (the sidecar proxy) have immutable headers.
    out = new Response(response.body, response)
    out.headers.set('x-request-id', requestId)
  }
  out.headers.set('x-content-type-options', 'nosniff')
  return out
}

/**
 * Errors turned into responses at the pipeline's edge: an ApiError answers as itself, a request
 * the client abandoned as 499, anything else as an opaque 500 (logged with its stack, never sent).
 * No route for the path is 404; a route for the path under another method is 405 with `Allow`.
 * @module
 */
import { ApiError, errorResponse, errors } from './errors.ts'
import type { Logger } from './logger.ts'
import type { RouteTable } from './router.ts'
import { coreError } from './core-errors.ts'
import { BodyIdleTimeoutError } from './request-guard.ts'

/** The body idle timeout behind `error` (a handler may wrap it as a cause), if that is what it is. */
function bodyTimeoutIn(error: unknown): BodyIdleTimeoutError | undefined {
  for (let at = error, hops = 0; at instanceof Error && hops < 4; at = at.cause, hops++)
    if (at instanceof BodyIdleTimeoutError) return at
  return undefined
}

/** The response for an error thrown while handling `request`. */
export function failureResponse(error: unknown, request: Request, requestId: string, logger: Logger): Response {
  if (error instanceof ApiError) return errorResponse(error)
  if (request.signal.aborted) return errorResponse(coreError('request_aborted', 'Client closed the request'))
  // The guard has already answered 408; the handler's read failing is the client's doing, not ours.
  const timedOut = bodyTimeoutIn(error)
  if (timedOut) {
    logger.info('request body stopped arriving', { requestId, reason: timedOut.message })
    return errorResponse(coreError('request_timeout', `The ${timedOut.message}`))
  }
  logger.error('unhandled error', {
    requestId,
    error: error instanceof Error ? { name: error.name, message: error.message, stack: error.stack } : String(error),
  })
  return errorResponse(errors.internal())
}

/** 405 with `Allow` when another method of the path has a route, else 404. */
export function unmatchedResponse(request: Request, pathname: string, table: RouteTable): Response {
  const allow = table.allowed(pathname)
  if (allow.length > 0) {
    return errorResponse(
      coreError('method_not_allowed', `Method ${request.method} not allowed`, {
        headers: { allow: [...allow, 'OPTIONS'].join(', ') },
      }),
    )
  }
  return errorResponse(coreError('not_found', 'Not found'))
}

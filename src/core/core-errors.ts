/**
 * Error codes the shared pipeline (routing, validation, request guard) and storage answer with,
 * on both surfaces. Each surface's catalogue spreads these; see `error-catalogue.ts`.
 * @module
 */
import { defineErrors, errorFactory } from './error-catalogue.ts'

/** Codes produced by `src/core` and `src/storage`, whichever surface is serving. */
export const CORE_ERRORS = defineErrors({
  invalid_json: { status: 400, description: 'The request body is not valid JSON' },
  invalid_path: {
    status: 400,
    description: 'A path (in the URL or the request) is not allowed: dot segments, or it resolves outside its root',
  },
  invalid_request_target: { status: 400, description: 'The request target is not a valid URL (check the Host header)' },
  unauthorized: { status: 401, description: 'Missing or invalid credentials' },
  forbidden: { status: 403, description: 'The credentials are valid but not allowed to do this' },
  not_found: { status: 404, description: 'No such route or resource' },
  method_not_allowed: { status: 405, description: 'The path exists but not with this method (see the Allow header)' },
  request_timeout: { status: 408, description: 'The request body stopped arriving; the connection is closed' },
  write_conflict: {
    status: 409,
    description: 'Too many concurrent changes to the same data; nothing was changed, retry the request',
  },
  payload_too_large: { status: 413, description: 'The request body is over the limit for this route' },
  rate_limited: {
    status: 429,
    description:
      'Too many attempts (sign-in) or requests (per credential: see the RateLimit headers); retry after the Retry-After header',
  },
  request_aborted: { status: 499, description: 'The client closed the request before the answer (logged, not sent)' },
  internal_error: { status: 500, description: 'Unexpected server error; the request id in the logs tells what' },
  server_busy: { status: 503, description: 'Too many requests in progress; retry after the Retry-After header' },
  database_unavailable: {
    status: 503,
    description: 'The database is unreachable or too slow; nothing was changed, retry after Retry-After',
  },
  outcome_unknown: {
    status: 503,
    description:
      'The database connection was lost while the change was being committed (or after): it may or may not have been made. Retry with the same Idempotency-Key to learn the outcome',
  },
})

/** Makes an error with one of the {@link CORE_ERRORS} codes. */
export const coreError = errorFactory(CORE_ERRORS)

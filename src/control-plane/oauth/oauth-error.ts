/**
 * Errors of the OAuth endpoints (`/oauth/*`), which answer in the RFC 6749 §5.2 shape
 * `{error, error_description}` rather than the API's `{code, message}`: OAuth client libraries
 * switch on `error`. Everything else in the control plane keeps the API's shape.
 * @module
 */
import { ApiError } from '../../core/errors.ts'

/** The `error` values the endpoints use (RFC 6749 §5.2, RFC 8628 §3.5, RFC 7591 §3.2.2, RFC 8707 §2). */
export type OAuthErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unauthorized_client'
  | 'unsupported_grant_type'
  | 'invalid_scope'
  | 'invalid_target'
  | 'authorization_pending'
  | 'slow_down'
  | 'access_denied'
  | 'expired_token'
  | 'unsupported_token_type'
  | 'invalid_redirect_uri'
  | 'invalid_client_metadata'
  | 'temporarily_unavailable'
  | 'unsupported_response_type'

/** An error answered as `{error, error_description}`. */
export class OAuthError extends Error {
  constructor(
    readonly error: OAuthErrorCode,
    readonly description: string,
    readonly status = 400,
    readonly headers: Record<string, string> = {},
  ) {
    super(description)
    this.name = 'OAuthError'
  }
}

/** Throws an {@link OAuthError}; a shorthand for the domain functions. */
export function oauthError(error: OAuthErrorCode, description: string, status = 400): OAuthError {
  return new OAuthError(error, description, status)
}

const JSON_HEADERS = {
  'content-type': 'application/json; charset=utf-8',
  // RFC 6749 §5.1: token responses and their errors must not be cached.
  'cache-control': 'no-store',
  pragma: 'no-cache',
  'x-content-type-options': 'nosniff',
}

/** A JSON response as the OAuth endpoints answer (never cached). */
export function oauthJson(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { ...JSON_HEADERS, ...headers } })
}

/**
 * Runs an OAuth endpoint: an {@link OAuthError} becomes its RFC body; an API error the pipeline
 * would answer (a database outage, a rate limit) keeps its status and gains the RFC fields, so
 * every answer of these endpoints carries `error`.
 */
export async function oauthEndpoint(run: () => Promise<Response>): Promise<Response> {
  try {
    return await run()
  } catch (error) {
    if (error instanceof OAuthError)
      return oauthJson({ error: error.error, error_description: error.description }, error.status, error.headers)
    if (error instanceof ApiError && error.status !== 500) {
      const code: OAuthErrorCode =
        error.status >= 500 || error.status === 429 ? 'temporarily_unavailable' : 'invalid_request'
      return oauthJson({ error: code, error_description: error.message }, error.status, error.headers ?? {})
    }
    throw error
  }
}

/**
 * The token in an `Authorization: Bearer <token>` header (RFC 6750 §2.1), parsed the same way by
 * every credential both surfaces take as a bearer: workspace tokens and console sessions, control
 * plane sessions, and Worker activity tokens.
 * @module
 */

/**
 * The longest Authorization header looked at. Every token either surface issues is far shorter;
 * a longer header is no credential of ours and is refused before any work is spent on it.
 */
export const MAX_AUTHORIZATION_LENGTH = 4096

// The scheme is case-insensitive (RFC 9110 §11.1); the token is one run of visible characters.
const BEARER = /^bearer[ \t]+(\S+)[ \t]*$/i

/**
 * The token of a bearer Authorization header value, or null when there is none: no header, another
 * scheme, an empty token, a token with spaces inside it, or a header longer than
 * {@link MAX_AUTHORIZATION_LENGTH}.
 */
export function parseBearer(header: string | null | undefined): string | null {
  if (!header || header.length > MAX_AUTHORIZATION_LENGTH) return null
  return BEARER.exec(header.trim())?.[1] ?? null
}

/** The bearer token a request carries in its Authorization header, or null. */
export function bearerToken(request: Request): string | null {
  return parseBearer(request.headers.get('authorization'))
}

/**
 * Reads the form-encoded bodies of the OAuth endpoints (RFC 6749 §3.2: `application/x-www-form-
 * urlencoded`). A parameter sent twice is an error (§3.1), an empty value is treated as absent, and
 * the body is bounded: these endpoints are public, so nothing large is read before a check.
 * @module
 */
import { readCapped } from '../../core/validation.ts'
import { oauthError } from './oauth-error.ts'

/** The largest form body read; every real request is far smaller. */
export const MAX_FORM_BYTES = 16 * 1024

/** The parameters of a form body, each present at most once. */
export type FormParams = ReadonlyMap<string, string>

/** Parses the request's form body; `invalid_request` for another content type, a repeat or an oversize body. */
export async function readForm(request: Request): Promise<FormParams> {
  const type = (request.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase()
  if (type !== 'application/x-www-form-urlencoded')
    throw oauthError('invalid_request', 'Send the parameters as application/x-www-form-urlencoded')
  if (Number(request.headers.get('content-length') ?? '0') > MAX_FORM_BYTES)
    throw oauthError('invalid_request', `The body exceeds ${MAX_FORM_BYTES} bytes`, 413)
  let text: string
  try {
    text = await readCapped(request, MAX_FORM_BYTES)
  } catch {
    throw oauthError('invalid_request', `The body exceeds ${MAX_FORM_BYTES} bytes`, 413)
  }
  const params = new Map<string, string>()
  for (const [name, value] of new URLSearchParams(text)) {
    if (value === '') continue
    if (params.has(name)) throw oauthError('invalid_request', `Parameter ${name} is repeated`)
    params.set(name, value)
  }
  return params
}

/** A required parameter, bounded in length. */
export function required(params: FormParams, name: string, maxLength = 512): string {
  const value = params.get(name)
  if (value === undefined) throw oauthError('invalid_request', `Missing parameter ${name}`)
  if (value.length > maxLength) throw oauthError('invalid_request', `Parameter ${name} is too long`)
  return value
}

/** An optional parameter, bounded in length. */
export function optional(params: FormParams, name: string, maxLength = 512): string | undefined {
  const value = params.get(name)
  if (value !== undefined && value.length > maxLength)
    throw oauthError('invalid_request', `Parameter ${name} is too long`)
  return value
}

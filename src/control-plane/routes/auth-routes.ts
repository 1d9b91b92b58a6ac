/**
 * `/v1/auth/*`: sign-up, sign-in, sign-out.
 * @module
 */
import { ErrorBodySchema } from '../../core/openapi.ts'
import { signIn, signUp } from '../identity/accounts.ts'
import { clientAddress } from '../identity/client-address.ts'
import { deleteSession } from '../identity/sessions.ts'
import { rules } from '../policy.ts'
import { SignedInResponse, SignInBody, SignUpBody } from '../wire/identity.ts'
import { route, type RouteContext } from './route.ts'

/** Routes of sign-up, sign-in and sign-out. */
export function authRoutes(ctx: RouteContext) {
  return [
    route({
      method: 'POST',
      path: '/v1/auth/sign-up',
      operationId: 'signUp',
      tags: ['auth'],
      summary: 'Create an account and sign in',
      description:
        'Open for the first account of an empty installation; afterwards needs `invitationToken` (a pending invitation for this email, which is accepted at once) unless open sign-up is configured. 403 `sign_up_not_allowed` with `details.reason`, the same whether or not the email already has an account (sign-up is decided before the email is looked up); 409 `email_taken` only to a caller allowed to sign up with that email. Refused attempts count in the sign-in throttle (per email and client address); past its limit every attempt is 429 with Retry-After.',
      auth: rules.public,
      body: SignUpBody,
      responses: {
        201: SignedInResponse,
        429: {
          description: 'Too many refused attempts for this email or address',
          schema: ErrorBodySchema,
          headers: { 'Retry-After': 'Seconds until sign-up is allowed again' },
        },
      },
      errors: [403, 409],
      handler: ({ body, request }) =>
        signUp(ctx.deps, body, { throttle: ctx.throttle, address: clientAddress(request, ctx.trustProxy) }),
    }),
    route({
      method: 'POST',
      path: '/v1/auth/sign-in',
      operationId: 'signIn',
      tags: ['auth'],
      summary: 'Exchange email and password for a session token',
      description:
        'Deliberately slow (scrypt). Failed attempts are limited per account and per client address; past the limit every attempt, right or wrong, is 429 with Retry-After until the window ends. 403 `sso_required` (after a correct password) when every organization of the account requires signing in with its identity provider.',
      auth: rules.public,
      body: SignInBody,
      responses: {
        200: SignedInResponse,
        429: {
          description: 'Too many failed attempts for this account or address',
          schema: ErrorBodySchema,
          headers: { 'Retry-After': 'Seconds until sign-in is allowed again' },
        },
      },
      errors: [401, 403],
      handler: ({ body, request }) =>
        signIn(ctx.deps, ctx.throttle, { ...body, address: clientAddress(request, ctx.trustProxy) }),
    }),
    route({
      method: 'POST',
      path: '/v1/auth/sign-out',
      operationId: 'signOut',
      tags: ['auth'],
      summary: 'End the current session',
      auth: rules.session,
      responses: { 204: { description: 'Signed out; the token no longer works' } },
      handler: async ({ principal }) => {
        await deleteSession(ctx.deps, principal.session!.id)
      },
    }),
  ]
}

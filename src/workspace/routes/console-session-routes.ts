/**
 * Workspace mode's console session routes: redeem the one-time code from the start-up banner,
 * exchange host rights for a session, sign out. The sessions themselves live in the console
 * (`src/console/console-sessions.ts`); the resolver that accepts them is `access/console-credentials.ts`.
 * @module
 */
import * as v from 'valibot'
import type { ConsoleSessions } from '../../console/console-sessions.ts'
import { errors } from '../../core/errors.ts'
import { routeFactory } from '../../core/route.ts'
import { bearerToken, rules, type Principal, type WorkspaceRule } from '../access/auth.ts'

const route = routeFactory<WorkspaceRule, Principal>()

const SessionSchema = v.object({
  token: v.pipe(v.string(), v.description('Owner-scoped bearer for the console; shown in this response only')),
  expiresAt: v.pipe(v.number(), v.description('epoch milliseconds')),
})

/** `/console/sessions` routes: redeem the one-time code, exchange host rights, sign out. */
export function consoleSessionRoutes(sessions: ConsoleSessions) {
  return [
    route({
      method: 'POST',
      path: '/console/sessions',
      operationId: 'redeemConsoleCode',
      summary: 'Exchange the one-time console code for a session',
      description:
        'The code printed at start (in the `#code=` fragment of the console link) works once and for an hour. The session is an owner-scoped bearer kept in server memory only: it ends at restart, after 12 hours, or on sign-out.',
      tags: ['console'],
      auth: rules.none,
      body: v.object({ code: v.pipe(v.string(), v.minLength(1), v.maxLength(256)) }),
      responses: { 201: SessionSchema },
      errors: [401],
      handler: ({ body }) => {
        const session = sessions.redeem(body.code)
        if (!session)
          throw errors.unauthorized('This console link was already used or has expired; paste the host token instead')
        return session
      },
    }),
    route({
      method: 'POST',
      path: '/console/sessions/host',
      operationId: 'createConsoleSession',
      summary: 'Exchange host rights for a console session',
      description:
        'For a console opened without the one-time link: the host token (or an owner token) buys a session with the same lifetime rules as a redeemed code.',
      tags: ['console'],
      auth: rules.host,
      responses: { 201: SessionSchema },
      handler: () => sessions.create(),
    }),
    route({
      method: 'DELETE',
      path: '/console/sessions/current',
      operationId: 'endConsoleSession',
      summary: 'Sign the console out',
      description: 'Ends the console session sent as the bearer token. Other credentials are left alone.',
      tags: ['console'],
      auth: rules.host,
      responses: { 200: v.object({ ok: v.literal(true), ended: v.boolean() }) },
      handler: ({ request }) => {
        const token = bearerToken(request)
        return { ok: true as const, ended: token ? sessions.end(token) : false }
      },
    }),
  ]
}

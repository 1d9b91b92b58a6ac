/**
 * Single sign-on with the organization's OpenID Connect provider (`/v1/org/sso`, `/v1/sso/*`)
 * and the admission policy (`/v1/org/admission-policy`).
 * @module
 */
import * as v from 'valibot'
import type { ApiError } from '../../core/errors.ts'
import { readAdmissionPolicy, type AdmissionPolicy } from '../admission/admission-policy.ts'
import { putAdmissionPolicy } from '../admission/admission-writes.ts'
import { actorOf } from '../auth.ts'
import { issuerOf } from '../oauth/issuer.ts'
import { rules } from '../policy.ts'
import {
  connectionBySlug,
  deleteConnection,
  findConnection,
  getConnection,
  putConnection,
  resolveSignIn,
} from '../sso/sso-connections.ts'
import {
  BINDING_COOKIE,
  exchangeHandoff,
  finishSignIn,
  isSignInRefusal,
  LOGIN_TTL_MS,
  SsoProviders,
  startSignIn,
} from '../sso/sso-flow.ts'
import { SignedInResponse } from '../wire/identity.ts'
import {
  AdmissionPolicyItem,
  CallbackQuery,
  PutAdmissionPolicyBody,
  PutSsoConnectionBody,
  ResolveQuery,
  SsoConnectionItem,
  SsoLinkResponse,
  SsoResolution,
  SsoSessionBody,
  StartQuery,
} from '../wire/sso.ts'
import { controlPlaneError } from '../control-plane-errors.ts'
import { route, type RouteContext } from './route.ts'

const SlugParams = v.object({ orgSlug: v.pipe(v.string(), v.maxLength(48)) })
const TAG = 'sso'

function redirect(location: string, cookie?: string): Response {
  const headers = new Headers({ location, 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' })
  if (cookie) headers.set('set-cookie', cookie)
  return new Response(null, { status: 302, headers })
}

/**
 * The binding cookie: HttpOnly, only sent to `/v1/sso/`, SameSite=Lax (it must come back on the
 * provider's top-level redirect), Secure on https; `value` empty clears it.
 */
function bindingCookie(base: string, value: string): string {
  const secure = base.startsWith('https:') ? '; Secure' : ''
  const age = value ? LOGIN_TTL_MS / 1000 : 0
  return `${BINDING_COOKIE}=${value}; Path=/v1/sso/; HttpOnly; SameSite=Lax; Max-Age=${age}${secure}`
}

/** The binding cookie's value from a request, if any. */
function bindingOf(request: Request): string | undefined {
  for (const part of (request.headers.get('cookie') ?? '').split(';')) {
    const [name, ...value] = part.trim().split('=')
    if (name === BINDING_COOKIE) return value.join('=')
  }
  return undefined
}

function policyView(policy: AdmissionPolicy) {
  const { orgId: _orgId, ...view } = policy
  return view
}

/** SSO and admission routes; `providers` caches discovery and key sets across requests. */
export function ssoRoutes(ctx: RouteContext, providers: SsoProviders = new SsoProviders(ctx.deps.now)) {
  const base = (request: Request) => issuerOf(request, ctx)
  return [
    route({
      method: 'GET',
      path: '/v1/org/sso',
      operationId: 'getSsoConnection',
      tags: [TAG],
      summary: "The organization's OpenID Connect connection (never its client secret)",
      description:
        '`redirectUri` is the exact URI to register with the provider. 404 `sso_not_configured` when there is none.',
      auth: rules.org('sso.manage'),
      responses: { 200: SsoConnectionItem },
      handler: async ({ principal, request }) => ({
        item: await getConnection(ctx.deps, actorOf(principal).orgId, base(request)),
      }),
    }),
    route({
      method: 'PUT',
      path: '/v1/org/sso',
      operationId: 'putSsoConnection',
      tags: [TAG],
      summary: 'Create or replace the OpenID Connect connection (owner)',
      description:
        "The issuer's `/.well-known/openid-configuration` is fetched and checked before saving (5 s, 256 KiB; its `issuer` must match exactly; https, or http on localhost); failures are 502 `sso_provider_error`. `clientSecret` is required when creating and kept when omitted later; it is stored sealed and never returned. Each of `allowedDomains` (1–100) routes sign-ins of that email domain to this provider and can belong to one organization only (409 `sso_domain_taken`); the slug names the sign-in URLs (409 `sso_slug_taken`). People of those domains join on first sign-in with `defaultRole` and `defaultTeamId` when the admission policy allows SSO just-in-time. While members must sign in with SSO, the issuer cannot change (409 `sso_connection_in_use`).",
      auth: rules.org('sso.manage'),
      body: PutSsoConnectionBody,
      responses: { 200: SsoConnectionItem, 201: SsoConnectionItem },
      errors: [404, 409, 502],
      handler: async ({ principal, body, request }) => {
        const saved = await putConnection(ctx.deps, actorOf(principal), body, base(request))
        return new Response(JSON.stringify({ item: saved.view }), {
          status: saved.created ? 201 : 200,
          headers: { 'content-type': 'application/json' },
        })
      },
    }),
    route({
      method: 'DELETE',
      path: '/v1/org/sso',
      operationId: 'deleteSsoConnection',
      tags: [TAG],
      summary: 'Remove the OpenID Connect connection (owner)',
      description:
        'Linked provider accounts stay linked (by issuer and subject) for a later connection to the same issuer. 409 `sso_connection_in_use` while members must sign in with SSO.',
      auth: rules.org('sso.manage'),
      responses: { 204: { description: 'Removed' } },
      errors: [409],
      handler: async ({ principal }) => {
        await deleteConnection(ctx.deps, actorOf(principal))
      },
    }),
    route({
      method: 'POST',
      path: '/v1/org/sso/link',
      operationId: 'startSsoLink',
      tags: [TAG],
      summary: "Link your account to the organization's provider: returns the provider URL to open",
      description:
        'Accounts are linked by the provider subject, never by email: an account that exists before its first SSO sign-in is linked only this way, by its signed-in owner. After the provider, the browser comes back to the console signed in through SSO. 409 `sso_identity_conflict` (at the callback) when that provider account is linked to another account.',
      auth: rules.org('sso.link'),
      body: StartQuery,
      responses: { 200: SsoLinkResponse },
      errors: [404, 502],
      handler: async ({ principal, request, body }) => {
        const actor = actorOf(principal)
        const connection = await findConnection(ctx.deps.db, actor.orgId)
        if (!connection)
          throw controlPlaneError('sso_not_configured', 'The organization has no single sign-on connection')
        const started = await startSignIn(ctx.deps, providers, {
          connection,
          base: base(request),
          returnTo: body.returnTo,
          linkUserId: actor.userId,
        })
        // The console calls this with fetch (same origin), which keeps the cookie for the callback.
        return new Response(JSON.stringify({ url: started.url }), {
          headers: {
            'content-type': 'application/json',
            'cache-control': 'no-store',
            'set-cookie': bindingCookie(base(request), started.binding),
          },
        })
      },
    }),
    route({
      method: 'GET',
      path: '/v1/sso/resolve',
      operationId: 'resolveSignIn',
      tags: [TAG],
      summary: 'Which sign-in applies to an email (password, or SSO with its start URL)',
      description:
        "Decided by the email's domain alone, so the answer is the same whether or not an account exists. `passwordAllowed` is false when the organization requires SSO.",
      auth: rules.public,
      query: ResolveQuery,
      responses: { 200: SsoResolution },
      handler: ({ query, request }) => resolveSignIn(ctx.deps, query.email, base(request)),
    }),
    route({
      method: 'GET',
      path: '/v1/sso/:orgSlug/start',
      operationId: 'startSsoSignIn',
      tags: ['sso-redirect'],
      summary: "Start signing in with the organization's provider (302 to the provider)",
      description:
        'Authorization code with PKCE S256, `state` and `nonce`; the verifier and nonce stay on the server for 10 minutes and are used once. Sets the `sso_binding` cookie (HttpOnly, Path /v1/sso/, SameSite=Lax): the callback is accepted only from the browser that started, against login CSRF. `returnTo` is a console path (`/console/…`, with an optional fragment such as `#device=CODE`); anything else returns to `/console/`.',
      auth: rules.public,
      params: SlugParams,
      query: StartQuery,
      responses: { 302: { description: 'To the provider', headers: { Location: 'Where to go' } } },
      errors: [404, 429, 502],
      handler: async ({ params, query, request }) => {
        const connection = await connectionBySlug(ctx.deps.db, params.orgSlug)
        const started = await startSignIn(ctx.deps, providers, {
          connection,
          base: base(request),
          returnTo: query.returnTo,
        })
        return redirect(started.url, bindingCookie(base(request), started.binding))
      },
    }),
    route({
      method: 'GET',
      path: '/v1/sso/:orgSlug/callback',
      operationId: 'ssoCallback',
      tags: ['sso-redirect'],
      summary: 'Where the provider sends the browser back (register this as the redirect URI)',
      description:
        'Checks `state` (known, unused, unexpired), exchanges the code, verifies the ID token (signature by the JWKS, refetched once on an unknown key id; `iss`, `aud`, `exp`, `nonce`), finds the account by (issuer, subject) and makes it a member on first sign-in when its domain and the admission policy allow. Then 302 to the return path with `#sso_handoff=<code>` (and `&then=<original fragment>`); the console exchanges the code at `POST /v1/sso/session`. Refusals also redirect, to `/console/#sso_error=<code>` (`sso_state_invalid`, `sso_id_token_invalid`, `sso_domain_not_allowed`, `sso_account_exists`, `sso_identity_conflict`, `admission_refused`, `sso_provider_denied`, `sso_provider_error`).',
      auth: rules.public,
      params: SlugParams,
      query: CallbackQuery,
      responses: { 302: { description: 'To the console', headers: { Location: 'Where to go' } } },
      handler: async ({ params, query, request }) => {
        const spent = bindingCookie(base(request), '')
        try {
          const input = { slug: params.orgSlug, base: base(request), binding: bindingOf(request), ...query }
          return redirect(await finishSignIn(ctx.deps, providers, input), spent)
        } catch (error) {
          if (isSignInRefusal(error)) return redirect(`/console/#sso_error=${(error as ApiError).code}`, spent)
          throw error
        }
      },
    }),
    route({
      method: 'POST',
      path: '/v1/sso/session',
      operationId: 'createSsoSession',
      tags: [TAG],
      summary: "Exchange the callback's one-time hand-off code for a session",
      description:
        'The code works once, within two minutes. The session is a normal sign-in session marked as signed in by the organization’s provider, which organizations that require SSO accept. 400 `sso_handoff_invalid`.',
      auth: rules.public,
      body: SsoSessionBody,
      responses: { 200: SignedInResponse },
      errors: [400],
      handler: ({ body }) => exchangeHandoff(ctx.deps, body.handoff),
    }),
    route({
      method: 'GET',
      path: '/v1/org/admission-policy',
      operationId: 'getAdmissionPolicy',
      tags: [TAG],
      summary: 'How people may join the organization, and whether they must sign in with SSO',
      description: 'Version 0 and every way open while the organization never wrote a policy.',
      auth: rules.org('admission.manage'),
      responses: { 200: AdmissionPolicyItem },
      handler: async ({ principal }) => ({
        item: policyView(await readAdmissionPolicy(ctx.deps.db, actorOf(principal).orgId)),
      }),
    }),
    route({
      method: 'PUT',
      path: '/v1/org/admission-policy',
      operationId: 'putAdmissionPolicy',
      tags: [TAG],
      summary: 'Replace the admission policy (owner; `expectedVersion` guards lost updates)',
      description:
        '409 `admission_policy_conflict` when `expectedVersion` is not the stored version. `waysIn` gates invitation acceptance, SSO just-in-time membership and SCIM provisioning; `allowedDomains` (≤ 100; empty: any) applies to all three. Switching `requireSso` on needs the SSO connection and a session it signed in (409 `sso_not_proven`, so an owner cannot lock themselves out), and ends in the same transaction the members’ other sessions, their API keys and OAuth grants in this organization. While it is on, password sessions of members are refused here with 403 `sso_required`.',
      auth: rules.org('admission.manage'),
      body: PutAdmissionPolicyBody,
      responses: { 200: AdmissionPolicyItem },
      errors: [409],
      handler: async ({ principal, body }) => ({
        item: policyView(
          await putAdmissionPolicy(ctx.deps, actorOf(principal), principal.session?.ssoOrgId ?? null, body),
        ),
      }),
    }),
  ]
}

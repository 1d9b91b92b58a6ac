/**
 * What stock OpenCode reads from the control plane (facts in the reference, users-and-sidecar
 * §2g): `GET /.well-known/opencode` (how `opencode auth login <url>` signs in, and where the
 * organization's config is), `GET /v1/me/opencode-config` (the member's delivered set as OpenCode config, read on every
 * OpenCode start with the stored organization token), the skills under the capability URL it
 * names (`/d/<secret>/index.json`, `/d/<secret>/<skill>/<file>`, fetched without credentials), and
 * the notice a signed-out OpenCode reads as an instruction.
 *
 * OpenCode refuses to start when the remote config does not answer 2xx, so the config route never
 * answers 4xx for a credential that does not work: it answers the configuration that delivers
 * nothing with an instruction saying why and how to sign in again or log out.
 * @module
 */
import * as v from 'valibot'
import { coreError } from '../../core/core-errors.ts'
import type { ControlPlanePrincipal } from '../auth.ts'
import { controlPlaneAuth } from '../auth.ts'
import {
  capabilityFor,
  resolveCapability,
  type CapabilityCredential,
  type OAuthGrantCheck,
} from '../delivery/capabilities.ts'
import { deliveredSet, type DeliverySet } from '../delivery/delivered-set.ts'
import { MissThrottle } from '../delivery/miss-throttle.ts'
import {
  opencodeConfigOf,
  signedOutConfig,
  signedOutNotice,
  type SignedOutReason,
} from '../delivery/opencode-config.ts'
import { SetCache } from '../delivery/set-cache.ts'
import { clientAddress } from '../identity/client-address.ts'
import { deviceLoginCommand } from '../oauth/device-login-command.ts'
import { rules } from '../policy.ts'
import { deliveryPrincipalOf } from './delivery-routes.ts'
import { route, type RouteContext } from './route.ts'

/** What the OpenCode routes need beyond the route context. */
export interface OpencodeRouteOptions {
  /** The configured public URL of this control plane (`workers.publicUrl`), else null. */
  publicUrl: string | null
  /** Checks OAuth grants behind capability URLs; null until OAuth tokens exist. */
  oauthActive: OAuthGrantCheck | null
}

const NOTICE_REASONS = ['signed_out', 'no_access', 'throttled'] as const

/** The built-in OAuth client stock OpenCode signs in as. */
const OPENCODE_CLIENT_ID = 'opencode'
/** The name OpenCode stores the organization token under (and substitutes in `remote_config.headers`). */
export const OPENCODE_TOKEN_ENV = 'SERVICE_ORG_TOKEN'

/** The server's URL as clients reach it: the configured public URL, else the request's origin. */
export function serverUrl(publicUrl: string | null, url: URL): string {
  return (publicUrl ?? url.origin).replace(/\/+$/, '')
}

function credentialOf(principal: ControlPlanePrincipal): CapabilityCredential | null {
  if (principal.credential === 'oauth' && principal.oauth) return { kind: 'oauth', id: principal.oauth.tokenId }
  if (principal.credential === 'apiKey' && principal.apiKeyId) return { kind: 'apiKey', id: principal.apiKeyId }
  if (principal.credential === 'session' && principal.session) return { kind: 'session', id: principal.session.id }
  return null
}

const json = (body: unknown, cache = 'no-store') =>
  new Response(JSON.stringify(body), { headers: { 'content-type': 'application/json', 'cache-control': cache } })

/** OpenCode routes. */
export function opencodeRoutes(ctx: RouteContext, options: OpencodeRouteOptions) {
  const auth = controlPlaneAuth(ctx.deps)
  const throttle = new MissThrottle(ctx.deps.now)
  const sets = new SetCache<DeliverySet>(ctx.deps.now)
  const noticeUrl = (url: URL, reason: SignedOutReason) =>
    `${serverUrl(options.publicUrl, url)}/v1/opencode/notice?reason=${reason}`

  /** The member behind a capability secret and their set (cached a few seconds unless `fresh`), or 404. */
  const capability = async (request: Request, secret: string, fresh = false) => {
    const address = clientAddress(request, ctx.trustProxy)
    const wait = throttle.blockedFor(address)
    if (wait > 0)
      throw coreError('rate_limited', 'Too many unknown capability URLs from this address', {
        headers: { 'retry-after': String(Math.ceil(wait / 1000)) },
      })
    const found = await resolveCapability(ctx.deps, secret, options.oauthActive)
    if (!found) {
      throttle.miss(address)
      sets.drop(secret)
      throw coreError('not_found', 'No such capability URL (the sign-in it belonged to has ended)')
    }
    return sets.get(found.capabilityId, () => deliveredSet(ctx.deps, found.member), fresh)
  }

  return [
    route({
      method: 'GET',
      path: '/.well-known/opencode',
      operationId: 'getOpencodeWellKnown',
      tags: ['delivery'],
      summary: 'How stock OpenCode signs in to this organization server (`opencode auth login <url>`)',
      description:
        "Public and static. `auth.command` is a self-contained POSIX `sh` + `curl` program running the device authorization grant for the built-in `opencode` client: it prints the verification URL and code on stderr and only the access token on stdout, which OpenCode stores for `auth.env`. `remote_config` tells OpenCode to read `GET /v1/me/opencode-config` with that token on every start. URLs use the configured public URL (`workers.publicUrl` / `SERVICE_CONTROL_PLANE_PUBLIC_URL`), else the request's origin.",
      auth: rules.public,
      responses: {
        200: {
          description: 'The well-known document OpenCode reads',
          schema: v.pipe(
            v.strictObject({
              auth: v.strictObject({ command: v.array(v.string()), env: v.string() }),
              remote_config: v.strictObject({
                url: v.string(),
                headers: v.strictObject({ Authorization: v.string() }),
              }),
            }),
            v.title('OpencodeWellKnown'),
          ),
          headers: { 'cache-control': 'public, max-age=300' },
        },
      },
      handler: ({ url }) => {
        const base = serverUrl(options.publicUrl, url)
        return json(
          {
            auth: { command: deviceLoginCommand(base, OPENCODE_CLIENT_ID), env: OPENCODE_TOKEN_ENV },
            remote_config: {
              url: `${base}/v1/me/opencode-config`,
              headers: { Authorization: `Bearer {env:${OPENCODE_TOKEN_ENV}}` },
            },
          },
          'public, max-age=300',
        )
      },
    }),
    route({
      method: 'GET',
      path: '/v1/me/opencode-config',
      operationId: 'getMyOpencodeConfig',
      tags: ['delivery'],
      summary: "The caller's delivered set as OpenCode configuration (what `opencode auth login` wires up)",
      description:
        'Send the organization token as `Authorization: Bearer` (an OAuth token with `delivery:read`, also a session token; or an API key in `x-api-key`). Answers OpenCode config JSON: `mcp` entries, `agent.<name>`, `command.<name>`, `instructions` (URLs of the context objects) and `skills: {urls: [<capability URL>]}` (an unguessable per-member, per-credential URL serving `index.json` and the files without credentials, which stops answering with the credential). **Never 4xx for a credential that does not work** (OpenCode would refuse to start): an unknown, revoked or expired token, or a member removed, gets 200 with a configuration that delivers nothing and one instruction saying why and how to sign in again (`opencode auth login <url>`) or log out (`opencode auth logout <url>`). After 60 unknown credentials a minute from one address, that address gets the same answer without a check until the minute ends.',
      auth: rules.public,
      responses: {
        200: {
          description: 'OpenCode configuration (global config, merged by OpenCode)',
          schema: v.pipe(v.record(v.string(), v.unknown()), v.title('OpencodeRemoteConfig')),
          headers: { 'cache-control': 'no-store' },
        },
      },
      handler: async ({ request, url }) => {
        const address = clientAddress(request, ctx.trustProxy)
        if (throttle.blockedFor(address) > 0) return json(signedOutConfig(noticeUrl(url, 'throttled')))
        let principal: ControlPlanePrincipal
        try {
          principal = await auth.authenticate(request, rules.org('delivery.read'))
        } catch (error) {
          const status = (error as { status?: number }).status
          if (status === 401) throttle.miss(address)
          if (status !== undefined && status >= 400 && status < 500)
            return json(signedOutConfig(noticeUrl(url, status === 401 ? 'signed_out' : 'no_access')))
          throw error
        }
        const member = deliveryPrincipalOf(principal)
        const credential = credentialOf(principal)
        if (member.kind !== 'member' || !credential) return json(signedOutConfig(noticeUrl(url, 'no_access')))
        const payloads = new Map<string, Record<string, unknown>>()
        const set = await deliveredSet(ctx.deps, member, payloads)
        const secret = await capabilityFor(ctx.deps, member, credential)
        return json(opencodeConfigOf(set, `${serverUrl(options.publicUrl, url)}/d/${secret}/`, payloads))
      },
    }),
    route({
      method: 'GET',
      path: '/v1/opencode/notice',
      operationId: 'getOpencodeNotice',
      tags: ['delivery'],
      summary: 'The instruction a signed-out OpenCode reads: why nothing was delivered, and how to sign in or log out',
      auth: rules.public,
      query: v.object({ reason: v.optional(v.picklist(NOTICE_REASONS)) }),
      responses: {
        200: {
          description: 'Markdown',
          contentType: 'text/markdown',
          headers: { 'cache-control': 'public, max-age=300' },
        },
      },
      errors: [400],
      handler: ({ url, query }) =>
        new Response(signedOutNotice(serverUrl(options.publicUrl, url), query.reason ?? 'signed_out'), {
          headers: { 'content-type': 'text/markdown; charset=utf-8', 'cache-control': 'public, max-age=300' },
        }),
    }),
    route({
      method: 'GET',
      path: '/d/:secret/index.json',
      operationId: 'getCapabilitySkillIndex',
      tags: ['delivery'],
      summary: "The member's skills for OpenCode's `skills.urls` (capability URL, no credentials)",
      description:
        "`{skills: [{name, files, version}]}`; `version` is the skill's content digest, so OpenCode replaces a skill's folder when it changes. 404 once the sign-in the URL belongs to has ended (token revoked or expired, member removed); 429 after 60 unknown URLs a minute from one address.",
      auth: rules.public,
      params: v.object({ secret: v.pipe(v.string(), v.maxLength(200)) }),
      responses: {
        200: {
          description: 'The skill index',
          schema: v.pipe(
            v.strictObject({
              skills: v.array(v.strictObject({ name: v.string(), files: v.array(v.string()), version: v.string() })),
            }),
            v.title('CapabilitySkillIndex'),
          ),
          headers: { 'cache-control': 'no-store' },
        },
      },
      errors: [404, 429],
      handler: async ({ request, params }) => {
        const set = await capability(request, params.secret, true)
        const skills = set.items
          .filter((i) => i.type === 'skill')
          .map((i) => ({ name: i.name, files: i.files.map((f) => f.path), version: i.digest }))
        return json({ skills })
      },
    }),
    route({
      method: 'GET',
      path: '/d/:secret/:path+',
      operationId: 'getCapabilityFile',
      tags: ['delivery'],
      summary: 'One file of a delivered skill (`<skill>/<file>`) or context (`_context/<name>.md`), no credentials',
      description:
        '404 for a file that is not delivered, or once the sign-in the URL belongs to has ended; 429 after 60 unknown URLs a minute from one address.',
      auth: rules.public,
      params: v.object({ secret: v.pipe(v.string(), v.maxLength(200)), path: v.pipe(v.string(), v.maxLength(2000)) }),
      responses: {
        200: {
          description: 'The file, as stored (text as UTF-8)',
          contentType: 'application/octet-stream',
          headers: { 'cache-control': 'no-store' },
        },
      },
      errors: [404, 429],
      handler: async ({ request, params }) => {
        const set = await capability(request, params.secret)
        let path = params.path
        try {
          path = decodeURIComponent(path)
        } catch {
          // Not percent-encoded after all: match it as sent.
        }
        const slash = path.indexOf('/')
        const [head, rest] = slash < 0 ? [path, ''] : [path.slice(0, slash), path.slice(slash + 1)]
        const item =
          head === '_context'
            ? set.items.find((i) => i.type === 'context' && `${i.name}.md` === rest)
            : set.items.find((i) => i.type === 'skill' && i.name === head)
        const file = item?.files.find((f) => f.path === (head === '_context' ? `${item.name}.md` : rest))
        if (!file) throw coreError('not_found', 'No such delivered file')
        const body = file.encoding === 'base64' ? Buffer.from(file.content, 'base64') : file.content
        return new Response(body, {
          headers: {
            'content-type': file.encoding === 'base64' ? 'application/octet-stream' : 'text/plain; charset=utf-8',
            'cache-control': 'no-store',
          },
        })
      },
    }),
  ]
}

/**
 * The console's side of the device grant: look up what a user code asks for, approve it for one
 * of the caller's organizations, or deny it. Signed-in sessions only: approving mints a
 * credential, so a person must do it, in a browser they signed in to. Wrong codes count against a
 * per-person and per-address throttle (10 and 50 in 15 minutes), so codes cannot be guessed.
 * @module
 */
import { assertSessionMayAct } from '../admission/admission-policy.ts'
import { errors } from '../../core/errors.ts'
import type { ControlPlanePrincipal } from '../auth.ts'
import { controlPlaneError } from '../control-plane-errors.ts'
import { clientAddress } from '../identity/client-address.ts'
import { SignInThrottle } from '../identity/sign-in-throttle.ts'
import { rules } from '../policy.ts'
import { route, type RouteContext } from '../routes/route.ts'
import {
  approveDeviceRequest,
  denyDeviceRequest,
  describeDeviceRequest,
  findPendingDeviceRequest,
} from './device-grant.ts'
import { BUILT_IN_CLIENTS } from './oauth-clients.ts'
import { ApproveDeviceBody, ApprovedDevice, DenyDeviceBody, DeviceQuery, DeviceRequestBody } from './oauth-wire.ts'

/** Wrong user codes allowed per person, and per address, in the window. */
export const USER_CODE_LIMITS = { maxFailuresPerAccount: 10, maxFailuresPerAddress: 50, windowMs: 15 * 60_000 }

/** Device approval routes. */
export function deviceRoutes(ctx: RouteContext) {
  const throttle = new SignInThrottle(USER_CODE_LIMITS, ctx.deps.now, ctx.deps.db)

  /** The pending request of a typed code; a miss counts against the throttle. */
  const lookup = async (request: Request, principal: ControlPlanePrincipal, typed: string) => {
    // The throttle's account key: a person, namespaced so it never meets a sign-in email's count.
    const key = `oauth-user-code:${principal.user!.id}`
    const address = clientAddress(request, ctx.trustProxy)
    const wait = await throttle.retryAfterSeconds(key, address)
    if (wait > 0) throw errors.tooManyRequests(wait, 'Too many wrong codes; wait before trying again')
    const found = await findPendingDeviceRequest(ctx.deps, typed)
    if ('missing' in found) {
      await throttle.recordFailure(key, address)
      throw controlPlaneError(
        'oauth_device_request_not_found',
        'No pending sign-in with this code: check it, or start the sign-in again (codes last 10 minutes)',
      )
    }
    return found
  }

  return [
    route({
      method: 'GET',
      path: '/v1/oauth/device',
      operationId: 'getDeviceRequest',
      tags: ['oauth-device'],
      summary: 'What a pending device sign-in asks for',
      description:
        "Session only. The client, the scopes and the organization the approval would bind the token to (the session's active one; another of the caller's can be named on approval). 404 for an unknown, expired or decided code; wrong codes are throttled (429).",
      auth: rules.session,
      query: DeviceQuery,
      responses: { 200: DeviceRequestBody },
      errors: [404, 429],
      handler: async ({ request, principal, query }) => {
        const found = await lookup(request, principal, query.userCode)
        return {
          ...describeDeviceRequest(found.row, found.userCode),
          organization: principal.org ? { id: principal.org.id, name: principal.org.name } : null,
        }
      },
    }),
    route({
      method: 'POST',
      path: '/v1/oauth/device/approve',
      operationId: 'approveDeviceRequest',
      tags: ['oauth-device'],
      summary: 'Approve a device sign-in for one of your organizations',
      description:
        "Session only. `orgId` defaults to the session's active organization; one the caller is not a member of is 404 `organization_not_found`. The client's next poll receives tokens acting as the caller in that organization.",
      auth: rules.session,
      body: ApproveDeviceBody,
      responses: { 200: ApprovedDevice },
      errors: [404, 429],
      handler: async ({ request, principal, body }) => {
        const found = await lookup(request, principal, body.userCode)
        const orgId = body.orgId ?? principal.org?.id ?? null
        await assertSessionMayAct(ctx.deps.db, orgId, principal.session?.ssoOrgId ?? null)
        const member = await approveDeviceRequest(ctx.deps, found.row, principal.user!.id, orgId)
        const client = BUILT_IN_CLIENTS.get(found.row.client_id)
        return {
          approved: true as const,
          organization: { id: member.orgId, name: member.orgName },
          client: { id: found.row.client_id, name: client?.name ?? found.row.client_id },
        }
      },
    }),
    route({
      method: 'POST',
      path: '/v1/oauth/device/deny',
      operationId: 'denyDeviceRequest',
      tags: ['oauth-device'],
      summary: 'Deny a device sign-in',
      description: "Session only. The client's next poll receives `access_denied`.",
      auth: rules.session,
      body: DenyDeviceBody,
      responses: { 204: { description: 'Denied' } },
      errors: [404, 429],
      handler: async ({ request, principal, body }) => {
        const found = await lookup(request, principal, body.userCode)
        await denyDeviceRequest(ctx.deps, found.row, principal.user!.id)
      },
    }),
  ]
}

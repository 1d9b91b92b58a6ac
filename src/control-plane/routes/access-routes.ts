/**
 * The three access-grant routes every catalog resource has (`GET/POST …/access`,
 * `DELETE …/access/:grantId`), declared once for each resource type.
 * @module
 */
import * as v from 'valibot'
import { actorOf } from '../auth.ts'
import { grantAccess, listGrants, revokeAccess } from '../catalog/access-grants.ts'
import type { ResourceType } from '../catalog/grant-roles.ts'
import { pageQuery } from '../pagination.ts'
import { rules, type Permission } from '../policy.ts'
import { idOf } from '../wire/common.ts'
import { AccessGrantItem, AccessGrantPage, CreateGrantBody, principalOf } from '../wire/config-objects.ts'
import { route, type RouteContext } from './route.ts'

/** Where a resource's access routes hang and how they are named. */
export interface AccessRouteSpec {
  type: ResourceType
  /** e.g. `/v1/plugins/:pluginId`. */
  base: string
  param: string
  prefix: string
  /** e.g. `Plugin` → `listPluginAccess`. */
  noun: string
  tag: string
  read: Permission
  write: Permission
}

/** Access routes for one resource type. */
export function accessRoutes(ctx: RouteContext, spec: AccessRouteSpec) {
  const params = v.object({ [spec.param]: idOf(spec.prefix) })
  const grantParams = v.object({ [spec.param]: idOf(spec.prefix), grantId: idOf('agr') })
  const id = (p: Record<string, string>) => p[spec.param]!
  return [
    route({
      method: 'GET',
      path: `${spec.base}/access`,
      operationId: `list${spec.noun}Access`,
      tags: [spec.tag],
      summary: `Access grants on a ${spec.noun.toLowerCase()} (manager)`,
      auth: rules.org(spec.read),
      params,
      query: v.object(pageQuery()),
      responses: { 200: AccessGrantPage },
      errors: [400],
      handler: ({ principal, params, query }) => listGrants(ctx.deps, actorOf(principal), spec.type, id(params), query),
    }),
    route({
      method: 'POST',
      path: `${spec.base}/access`,
      operationId: `grant${spec.noun}Access`,
      tags: [spec.tag],
      summary: `Grant a member, a team or the organization a role on a ${spec.noun.toLowerCase()} (manager)`,
      description:
        'Exactly one of `memberId`, `teamId` or `orgWide: true`. Granting to a principal that already has a grant changes its role. Only owners and admins may grant org-wide (403). 404 `member_not_found` / `team_not_found` for principals outside the organization.',
      auth: rules.org(spec.write),
      params,
      body: CreateGrantBody,
      responses: { 201: AccessGrantItem },
      handler: async ({ principal, params, body }) => {
        const grant = body as v.InferOutput<typeof CreateGrantBody>
        return {
          item: await grantAccess(ctx.deps, actorOf(principal), spec.type, id(params), principalOf(grant), grant.role),
        }
      },
    }),
    route({
      method: 'DELETE',
      path: `${spec.base}/access/:grantId`,
      operationId: `revoke${spec.noun}Access`,
      tags: [spec.tag],
      summary: `Revoke a grant on a ${spec.noun.toLowerCase()} (manager); it stops applying at once`,
      auth: rules.org(spec.write),
      params: grantParams,
      responses: { 204: { description: 'Revoked' } },
      handler: ({ principal, params }) =>
        revokeAccess(ctx.deps, actorOf(principal), spec.type, id(params), (params as Record<string, string>).grantId!),
    }),
  ]
}

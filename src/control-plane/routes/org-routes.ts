/**
 * `/v1/org` (the current organization) and `/v1/roles` (the audit log: `audit-routes.ts`).
 * @module
 */
import { actorOf } from '../auth.ts'
import { getOrganization, updateOrganization } from '../admin/organizations.ts'
import { ASSIGNABLE_ROLES, permissionsOf, ROLES, rules, type Role } from '../policy.ts'
import { OrganizationItem, RolePage, UpdateOrganizationBody } from '../wire/admin.ts'
import { route, type RouteContext } from './route.ts'

const ROLE_TEXT: Record<Role, string> = {
  owner: 'Created the organization; holds every permission. Not assignable, cannot be removed.',
  admin: 'Administers members, invitations, teams and API keys; cannot change roles.',
  member: 'Reads the organization, its members, teams and roles.',
}

/** Routes of the current organization and roles. */
export function orgRoutes(ctx: RouteContext) {
  return [
    route({
      method: 'GET',
      path: '/v1/org',
      operationId: 'getOrganization',
      tags: ['organization'],
      summary: 'The current organization',
      auth: rules.org('org.read'),
      responses: { 200: OrganizationItem },
      handler: async ({ principal }) => ({ item: await getOrganization(ctx.deps, principal.org!.id) }),
    }),
    route({
      method: 'PATCH',
      path: '/v1/org',
      operationId: 'updateOrganization',
      tags: ['organization'],
      summary: 'Change the current organization',
      auth: rules.org('org.update'),
      body: UpdateOrganizationBody,
      responses: { 200: OrganizationItem },
      handler: async ({ principal, body }) => ({ item: await updateOrganization(ctx.deps, actorOf(principal), body) }),
    }),
    route({
      method: 'GET',
      path: '/v1/roles',
      operationId: 'listRoles',
      tags: ['roles'],
      summary: 'The roles and what each may do, from the policy table',
      description:
        '`permissions` apply to sessions; `apiKeyPermissions` to API keys created by a member with that role.',
      auth: rules.org('roles.read'),
      responses: { 200: RolePage },
      handler: () => ({
        items: ROLES.map((id) => ({
          id,
          description: ROLE_TEXT[id],
          assignable: (ASSIGNABLE_ROLES as readonly string[]).includes(id),
          permissions: permissionsOf(id, 'session'),
          apiKeyPermissions: permissionsOf(id, 'apiKey'),
        })),
        nextCursor: null,
      }),
    }),
  ]
}

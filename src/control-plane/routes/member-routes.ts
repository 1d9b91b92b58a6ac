/**
 * `/v1/members`: list, read, change role, remove.
 * @module
 */
import * as v from 'valibot'
import { actorOf } from '../auth.ts'
import { changeMemberRole, getMember, listMembers, removeMember, transferOwnership } from '../admin/members.ts'
import { pageQuery } from '../pagination.ts'
import { ROLES, rules } from '../policy.ts'
import { ChangeRoleBody, MemberItem, MemberPage } from '../wire/admin.ts'
import { idParams } from '../wire/common.ts'
import { route, type RouteContext } from './route.ts'

const MemberParams = idParams(['memberId', 'mem'])

/** Member routes. */
export function memberRoutes(ctx: RouteContext) {
  return [
    route({
      method: 'GET',
      path: '/v1/members',
      operationId: 'listMembers',
      tags: ['members'],
      summary: 'Members of the current organization, in joining order',
      auth: rules.org('members.read'),
      query: v.object({ ...pageQuery(), role: v.optional(v.picklist(ROLES)) }),
      responses: { 200: MemberPage },
      errors: [400],
      handler: ({ principal, query }) => listMembers(ctx.deps, principal.org!.id, query),
    }),
    route({
      method: 'GET',
      path: '/v1/members/:memberId',
      operationId: 'getMember',
      tags: ['members'],
      summary: 'One member',
      auth: rules.org('members.read'),
      params: MemberParams,
      responses: { 200: MemberItem },
      handler: async ({ principal, params }) => ({
        item: await getMember(ctx.deps, principal.org!.id, params.memberId),
      }),
    }),
    route({
      method: 'PATCH',
      path: '/v1/members/:memberId',
      operationId: 'changeMemberRole',
      tags: ['members'],
      summary: "Change a member's role (admin or member)",
      description:
        "A change disables the member's API keys. The owner's role cannot be changed (409 `owner_protected`).",
      auth: rules.org('members.update_role'),
      params: MemberParams,
      body: ChangeRoleBody,
      responses: { 200: MemberItem },
      errors: [409],
      handler: async ({ principal, params, body }) => ({
        item: await changeMemberRole(ctx.deps, actorOf(principal), params.memberId, body.role),
      }),
    }),
    route({
      method: 'POST',
      path: '/v1/members/:memberId/transfer-ownership',
      operationId: 'transferOwnership',
      tags: ['members'],
      summary: 'Make this member the owner; the current owner becomes an admin',
      description:
        "Owner only, with a session. Both members' API keys are disabled (their roles changed). 409 `already_owner`.",
      auth: rules.org('members.transfer_ownership'),
      params: MemberParams,
      responses: { 200: MemberItem },
      errors: [409],
      handler: async ({ principal, params }) => ({
        item: await transferOwnership(ctx.deps, actorOf(principal), params.memberId),
      }),
    }),
    route({
      method: 'DELETE',
      path: '/v1/members/:memberId',
      operationId: 'removeMember',
      tags: ['members'],
      summary: 'Remove a member',
      description:
        'Their team memberships end and their API keys are disabled. The owner cannot be removed (409 `owner_protected`).',
      auth: rules.org('members.remove'),
      params: MemberParams,
      responses: { 204: { description: 'Removed' } },
      errors: [409],
      handler: ({ principal, params }) => removeMember(ctx.deps, actorOf(principal), params.memberId),
    }),
  ]
}

/**
 * `/v1/teams`: CRUD and membership.
 * @module
 */
import * as v from 'valibot'
import { actorOf } from '../auth.ts'
import {
  addTeamMember,
  createTeam,
  deleteTeam,
  getTeam,
  listTeamMembers,
  listTeams,
  removeTeamMember,
  updateTeam,
} from '../admin/teams.ts'
import { pageQuery } from '../pagination.ts'
import { rules } from '../policy.ts'
import {
  AddTeamMemberBody,
  CreateTeamBody,
  MemberItem,
  MemberPage,
  TeamItem,
  TeamPage,
  UpdateTeamBody,
} from '../wire/admin.ts'
import { idParams } from '../wire/common.ts'
import { getMember } from '../admin/members.ts'
import { route, type RouteContext } from './route.ts'

const TeamParams = idParams(['teamId', 'team'])
const TeamMemberParams = idParams(['teamId', 'team'], ['memberId', 'mem'])

/** Team routes. */
export function teamRoutes(ctx: RouteContext) {
  return [
    route({
      method: 'GET',
      path: '/v1/teams',
      operationId: 'listTeams',
      tags: ['teams'],
      summary: 'Teams of the current organization',
      auth: rules.org('teams.read'),
      query: v.object(pageQuery()),
      responses: { 200: TeamPage },
      errors: [400],
      handler: ({ principal, query }) => listTeams(ctx.deps, principal.org!.id, query),
    }),
    route({
      method: 'POST',
      path: '/v1/teams',
      operationId: 'createTeam',
      tags: ['teams'],
      summary: 'Create a team, optionally with members',
      description:
        '409 `team_exists` for a name already used in the organization; 404 `member_not_found` for a member id not in it.',
      auth: rules.org('teams.manage'),
      body: CreateTeamBody,
      responses: { 201: TeamItem },
      errors: [404, 409],
      handler: async ({ principal, body }) => ({ item: await createTeam(ctx.deps, actorOf(principal), body) }),
    }),
    route({
      method: 'GET',
      path: '/v1/teams/:teamId',
      operationId: 'getTeam',
      tags: ['teams'],
      summary: 'One team',
      auth: rules.org('teams.read'),
      params: TeamParams,
      responses: { 200: TeamItem },
      handler: async ({ principal, params }) => ({ item: await getTeam(ctx.deps, principal.org!.id, params.teamId) }),
    }),
    route({
      method: 'PATCH',
      path: '/v1/teams/:teamId',
      operationId: 'updateTeam',
      tags: ['teams'],
      summary: 'Rename or re-describe a team',
      auth: rules.org('teams.manage'),
      params: TeamParams,
      body: UpdateTeamBody,
      responses: { 200: TeamItem },
      errors: [409],
      handler: async ({ principal, params, body }) => ({
        item: await updateTeam(ctx.deps, actorOf(principal), params.teamId, body),
      }),
    }),
    route({
      method: 'DELETE',
      path: '/v1/teams/:teamId',
      operationId: 'deleteTeam',
      tags: ['teams'],
      summary: 'Delete a team (its members stay in the organization)',
      auth: rules.org('teams.manage'),
      params: TeamParams,
      responses: { 204: { description: 'Deleted' } },
      handler: ({ principal, params }) => deleteTeam(ctx.deps, actorOf(principal), params.teamId),
    }),
    route({
      method: 'GET',
      path: '/v1/teams/:teamId/members',
      operationId: 'listTeamMembers',
      tags: ['teams'],
      summary: "A team's members",
      auth: rules.org('teams.read'),
      params: TeamParams,
      query: v.object(pageQuery()),
      responses: { 200: MemberPage },
      errors: [400],
      handler: ({ principal, params, query }) => listTeamMembers(ctx.deps, principal.org!.id, params.teamId, query),
    }),
    route({
      method: 'POST',
      path: '/v1/teams/:teamId/members',
      operationId: 'addTeamMember',
      tags: ['teams'],
      summary: 'Add a member to a team',
      description: '409 `already_in_team`.',
      auth: rules.org('teams.manage'),
      params: TeamParams,
      body: AddTeamMemberBody,
      responses: { 201: MemberItem },
      errors: [409],
      handler: async ({ principal, params, body }) => {
        await addTeamMember(ctx.deps, actorOf(principal), params.teamId, body.memberId)
        return { item: await getMember(ctx.deps, principal.org!.id, body.memberId) }
      },
    }),
    route({
      method: 'DELETE',
      path: '/v1/teams/:teamId/members/:memberId',
      operationId: 'removeTeamMember',
      tags: ['teams'],
      summary: 'Remove a member from a team',
      auth: rules.org('teams.manage'),
      params: TeamMemberParams,
      responses: { 204: { description: 'Removed from the team' } },
      handler: ({ principal, params }) =>
        removeTeamMember(ctx.deps, actorOf(principal), params.teamId, params.memberId),
    }),
  ]
}

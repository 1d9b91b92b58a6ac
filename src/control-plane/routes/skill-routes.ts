/**
 * `/v1/skills` (the typed view of single skills), `/v1/skill-hubs` (reusable collections with
 * assignments and access) and `/v1/me/skills` (what the caller receives, and through what).
 * @module
 */
import * as v from 'valibot'
import { actorOf } from '../auth.ts'
import {
  addHubSkill,
  assignHub,
  createHub,
  deleteHub,
  getHub,
  listAssignments,
  listHubs,
  listHubSkills,
  removeHubSkill,
  unassignHub,
  updateHub,
} from '../catalog/skill-hubs.ts'
import { createSkill, getSkill, listReceivedSkills, listSkills } from '../catalog/skills.ts'
import { pageQuery } from '../pagination.ts'
import { rules } from '../policy.ts'
import {
  AddHubSkillBody,
  AssignHubBody,
  CreateContainerBody,
  CreateSkillBody,
  HubAssignmentItem,
  HubAssignmentPage,
  ReceivedSkillPage,
  SkillHubItem,
  SkillHubPage,
  SkillItem,
  SkillPage,
  UpdateContainerBody,
} from '../wire/catalog.ts'
import { idParams } from '../wire/common.ts'
import { principalOf } from '../wire/config-objects.ts'
import { accessRoutes } from './access-routes.ts'
import { route, type RouteContext } from './route.ts'

const Page = v.object(pageQuery())
const SkillParams = idParams(['skillId', 'cob'])
const HubParams = idParams(['hubId', 'shub'])
const HubSkillParams = idParams(['hubId', 'shub'], ['skillId', 'cob'])
const AssignmentParams = idParams(['hubId', 'shub'], ['assignmentId', 'sha'])
const TAG = 'skills'

/** Skill and skill-hub routes. */
export function skillRoutes(ctx: RouteContext) {
  return [
    route({
      method: 'GET',
      path: '/v1/skills',
      operationId: 'listSkills',
      tags: [TAG],
      summary: 'Skills the caller can see (config objects of type skill, not deleted)',
      auth: rules.org('config_objects.read'),
      query: Page,
      responses: { 200: SkillPage },
      errors: [400],
      handler: ({ principal, query }) => listSkills(ctx.deps, actorOf(principal), query),
    }),
    route({
      method: 'POST',
      path: '/v1/skills',
      operationId: 'createSkill',
      tags: [TAG],
      summary: 'Create a skill from a SKILL.md',
      description:
        'Frontmatter `name` must match `^[a-z0-9]+(-[a-z0-9]+)*$` (1-64), `description` 1-1024 characters, and the body must not be empty; otherwise 422 naming the field (`skillMd.frontmatter.name`, …) with `details.reason`.',
      auth: rules.org('config_objects.write'),
      body: CreateSkillBody,
      responses: { 201: SkillItem },
      handler: async ({ principal, body }) => ({ item: await createSkill(ctx.deps, actorOf(principal), body) }),
    }),
    route({
      method: 'GET',
      path: '/v1/skills/:skillId',
      operationId: 'getSkill',
      tags: [TAG],
      summary: 'One skill (its versions, resolved form and access are under /v1/config-objects/:id)',
      auth: rules.org('config_objects.read'),
      params: SkillParams,
      responses: { 200: SkillItem },
      handler: async ({ principal, params }) => ({
        item: await getSkill(ctx.deps, actorOf(principal), params.skillId),
      }),
    }),
    route({
      method: 'GET',
      path: '/v1/me/skills',
      operationId: 'listMySkills',
      tags: [TAG],
      summary: 'Every active skill the caller receives, directly by a grant or through an assigned hub, with each path',
      auth: rules.org('skill_hubs.read'),
      query: Page,
      responses: { 200: ReceivedSkillPage },
      errors: [400],
      handler: ({ principal, query }) => listReceivedSkills(ctx.deps, actorOf(principal), query),
    }),
    route({
      method: 'GET',
      path: '/v1/skill-hubs',
      operationId: 'listSkillHubs',
      tags: [TAG],
      summary: 'Skill hubs the caller can see or is assigned',
      auth: rules.org('skill_hubs.read'),
      query: Page,
      responses: { 200: SkillHubPage },
      errors: [400],
      handler: ({ principal, query }) => listHubs(ctx.deps, actorOf(principal), query),
    }),
    route({
      method: 'POST',
      path: '/v1/skill-hubs',
      operationId: 'createSkillHub',
      tags: [TAG],
      summary: 'Create a skill hub; the creator gets a manager grant',
      description: '409 `skill_hub_exists` for a name already used in the organization.',
      auth: rules.org('skill_hubs.write'),
      body: CreateContainerBody,
      responses: { 201: SkillHubItem },
      errors: [409],
      handler: async ({ principal, body }) => ({ item: await createHub(ctx.deps, actorOf(principal), body) }),
    }),
    route({
      method: 'GET',
      path: '/v1/skill-hubs/:hubId',
      operationId: 'getSkillHub',
      tags: [TAG],
      summary: 'One skill hub',
      auth: rules.org('skill_hubs.read'),
      params: HubParams,
      responses: { 200: SkillHubItem },
      handler: async ({ principal, params }) => ({ item: await getHub(ctx.deps, actorOf(principal), params.hubId) }),
    }),
    route({
      method: 'PATCH',
      path: '/v1/skill-hubs/:hubId',
      operationId: 'updateSkillHub',
      tags: [TAG],
      summary: 'Rename or re-describe a skill hub (editor)',
      auth: rules.org('skill_hubs.write'),
      params: HubParams,
      body: UpdateContainerBody,
      responses: { 200: SkillHubItem },
      errors: [409],
      handler: async ({ principal, params, body }) => ({
        item: await updateHub(ctx.deps, actorOf(principal), params.hubId, body),
      }),
    }),
    route({
      method: 'DELETE',
      path: '/v1/skill-hubs/:hubId',
      operationId: 'deleteSkillHub',
      tags: [TAG],
      summary: 'Delete a skill hub with its assignments and grants (manager); the skills stay',
      auth: rules.org('skill_hubs.write'),
      params: HubParams,
      responses: { 204: { description: 'Deleted' } },
      handler: ({ principal, params }) => deleteHub(ctx.deps, actorOf(principal), params.hubId),
    }),
    route({
      method: 'GET',
      path: '/v1/skill-hubs/:hubId/skills',
      operationId: 'listSkillHubSkills',
      tags: [TAG],
      summary: "The hub's skills",
      auth: rules.org('skill_hubs.read'),
      params: HubParams,
      query: Page,
      responses: { 200: SkillPage },
      errors: [400],
      handler: ({ principal, params, query }) => listHubSkills(ctx.deps, actorOf(principal), params.hubId, query),
    }),
    route({
      method: 'POST',
      path: '/v1/skill-hubs/:hubId/skills',
      operationId: 'addSkillHubSkill',
      tags: [TAG],
      summary: 'Add a skill to a hub (editor on the hub)',
      description: '404 `skill_not_found` for an id that is not a skill the caller can see; 409 `already_in_hub`.',
      auth: rules.org('skill_hubs.write'),
      params: HubParams,
      body: AddHubSkillBody,
      responses: { 201: SkillItem },
      errors: [409],
      handler: async ({ principal, params, body }) => ({
        item: await addHubSkill(ctx.deps, actorOf(principal), params.hubId, body.skillId),
      }),
    }),
    route({
      method: 'DELETE',
      path: '/v1/skill-hubs/:hubId/skills/:skillId',
      operationId: 'removeSkillHubSkill',
      tags: [TAG],
      summary: 'Remove a skill from a hub (editor)',
      auth: rules.org('skill_hubs.write'),
      params: HubSkillParams,
      responses: { 204: { description: 'Removed' } },
      handler: ({ principal, params }) => removeHubSkill(ctx.deps, actorOf(principal), params.hubId, params.skillId),
    }),
    route({
      method: 'GET',
      path: '/v1/skill-hubs/:hubId/assignments',
      operationId: 'listSkillHubAssignments',
      tags: [TAG],
      summary: 'Who receives the hub',
      auth: rules.org('skill_hubs.read'),
      params: HubParams,
      query: Page,
      responses: { 200: HubAssignmentPage },
      errors: [400],
      handler: ({ principal, params, query }) => listAssignments(ctx.deps, actorOf(principal), params.hubId, query),
    }),
    route({
      method: 'POST',
      path: '/v1/skill-hubs/:hubId/assignments',
      operationId: 'assignSkillHub',
      tags: [TAG],
      summary: 'Assign the hub to a member, a team or the organization (manager; org-wide needs an owner or admin)',
      description: '409 `already_assigned`; 404 `member_not_found` / `team_not_found`.',
      auth: rules.org('skill_hubs.write'),
      params: HubParams,
      body: AssignHubBody,
      responses: { 201: HubAssignmentItem },
      errors: [409],
      handler: async ({ principal, params, body }) => ({
        item: await assignHub(ctx.deps, actorOf(principal), params.hubId, principalOf(body)),
      }),
    }),
    route({
      method: 'DELETE',
      path: '/v1/skill-hubs/:hubId/assignments/:assignmentId',
      operationId: 'unassignSkillHub',
      tags: [TAG],
      summary: 'Remove an assignment (manager); its skills stop reaching those people at once',
      auth: rules.org('skill_hubs.write'),
      params: AssignmentParams,
      responses: { 204: { description: 'Removed' } },
      handler: ({ principal, params }) => unassignHub(ctx.deps, actorOf(principal), params.hubId, params.assignmentId),
    }),
    ...accessRoutes(ctx, {
      type: 'skill_hub',
      base: '/v1/skill-hubs/:hubId',
      param: 'hubId',
      prefix: 'shub',
      noun: 'SkillHub',
      tag: TAG,
      read: 'skill_hubs.read',
      write: 'skill_hubs.write',
    }),
  ]
}

/**
 * Delivery: `GET /v1/me/delivery` (what reaches the caller, member or Worker), plugin assignments
 * (`/v1/plugins/:id/assignments`, like skill-hub assignments) and a Worker's own delivery
 * (`/v1/workers/:id/delivery`).
 * @module
 */
import * as v from 'valibot'
import { actorOf, type ControlPlanePrincipal } from '../auth.ts'
import { deliveredSet, type DeliveryPrincipal } from '../delivery/delivered-set.ts'
import { assignPlugin, listPluginAssignments, unassignPlugin } from '../delivery/plugin-assignments.ts'
import { getWorkerDelivery, setWorkerDelivery } from '../delivery/worker-delivery.ts'
import { pageQuery } from '../pagination.ts'
import { rules } from '../policy.ts'
import { idParams } from '../wire/common.ts'
import { principalOf } from '../wire/config-objects.ts'
import {
  AssignPluginBody,
  DeliverySetResponse,
  PluginAssignmentItem,
  PluginAssignmentPage,
  WorkerDeliveryBody,
  WorkerDeliveryItem,
} from '../wire/delivery.ts'
import { route, type RouteContext } from './route.ts'

const PluginParams = idParams(['pluginId', 'plg'])
const AssignmentParams = idParams(['pluginId', 'plg'], ['assignmentId', 'pla'])
const WorkerParams = idParams(['workerId', 'wrk'])

/** The delivery principal of an authenticated caller (a member, or a Worker's runtime). */
export function deliveryPrincipalOf(principal: ControlPlanePrincipal): DeliveryPrincipal {
  if (principal.worker)
    return {
      kind: 'worker',
      orgId: principal.worker.orgId,
      orgName: principal.worker.orgName,
      workerId: principal.worker.id,
      workerName: principal.worker.name,
    }
  const actor = actorOf(principal)
  return {
    kind: 'member',
    orgId: actor.orgId,
    orgName: principal.org!.name,
    userId: actor.userId,
    memberId: actor.memberId,
  }
}

/** Delivery routes. */
export function deliveryRoutes(ctx: RouteContext) {
  return [
    route({
      method: 'GET',
      path: '/v1/me/delivery',
      operationId: 'getMyDelivery',
      tags: ['delivery'],
      summary: 'What the organization delivers to the caller, as resolved files with a digest',
      description:
        "A member receives the active skills that reach them (grants, and skill hubs assigned to them, their teams or the organization) and every active object of the active plugins assigned to them the same ways; each item lists every `reasons` it arrives by. A Worker's runtime (its activity token `wka_…`) receives its own delivery (`PUT /v1/workers/:id/delivery`), including its model providers with their keys, which no other answer carries. File paths are relative to the item's home: skill → `.opencode/skills/<name>/`, command → `.opencode/commands/`, agent → `.opencode/agents/`, tool → `.opencode/tools/`, hook → `.opencode/plugins/`, context → `.opencode/context/`. `digest` changes whenever any item does; `delivery.changed` in `GET /v1/events` says when to re-read. 409 `delivery_too_large` beyond 5,000 items or 256 MiB.",
      auth: rules.orgOrWorker('delivery.read'),
      responses: {
        200: {
          description: 'The delivered set',
          schema: DeliverySetResponse,
          headers: { etag: 'The set digest, quoted', 'cache-control': 'no-store' },
        },
      },
      errors: [409],
      handler: async ({ principal }) => {
        const set = await deliveredSet(ctx.deps, deliveryPrincipalOf(principal))
        return new Response(JSON.stringify(set), {
          headers: { 'content-type': 'application/json', 'cache-control': 'no-store', etag: `"${set.digest}"` },
        })
      },
    }),
    route({
      method: 'GET',
      path: '/v1/plugins/:pluginId/assignments',
      operationId: 'listPluginAssignments',
      tags: ['plugins'],
      summary: 'Who receives the plugin',
      auth: rules.org('plugins.read'),
      params: PluginParams,
      query: v.object(pageQuery()),
      responses: { 200: PluginAssignmentPage },
      errors: [400],
      handler: ({ principal, params, query }) =>
        listPluginAssignments(ctx.deps, actorOf(principal), params.pluginId, query),
    }),
    route({
      method: 'POST',
      path: '/v1/plugins/:pluginId/assignments',
      operationId: 'assignPlugin',
      tags: ['plugins'],
      summary: 'Deliver the plugin to a member, a team or the organization (manager; org-wide needs an owner or admin)',
      description:
        "Every active object of the plugin (while it is active) reaches the assignees' delivered set. 409 `already_assigned`; 404 `member_not_found` / `team_not_found`.",
      auth: rules.org('plugins.write'),
      params: PluginParams,
      body: AssignPluginBody,
      responses: { 201: PluginAssignmentItem },
      errors: [409],
      handler: async ({ principal, params, body }) => ({
        item: await assignPlugin(ctx.deps, actorOf(principal), params.pluginId, principalOf(body)),
      }),
    }),
    route({
      method: 'DELETE',
      path: '/v1/plugins/:pluginId/assignments/:assignmentId',
      operationId: 'unassignPlugin',
      tags: ['plugins'],
      summary: 'Remove an assignment (manager); its objects stop reaching those people at once',
      auth: rules.org('plugins.write'),
      params: AssignmentParams,
      responses: { 204: { description: 'Removed' } },
      handler: ({ principal, params }) =>
        unassignPlugin(ctx.deps, actorOf(principal), params.pluginId, params.assignmentId),
    }),
    route({
      method: 'GET',
      path: '/v1/workers/:workerId/delivery',
      operationId: 'getWorkerDelivery',
      tags: ['workers'],
      summary: 'The skill hubs, plugins and model providers the Worker receives',
      auth: rules.org('workers.read'),
      params: WorkerParams,
      responses: { 200: WorkerDeliveryItem },
      handler: async ({ principal, params }) => ({
        item: await getWorkerDelivery(ctx.deps, principal.org!.id, params.workerId),
      }),
    }),
    route({
      method: 'PUT',
      path: '/v1/workers/:workerId/delivery',
      operationId: 'setWorkerDelivery',
      tags: ['workers'],
      summary: 'Set what the Worker receives (replaces the whole list)',
      description:
        "The Worker's runtime reads its set with its activity token at `GET /v1/me/delivery` and hears of this change as `delivery.changed` in `GET /v1/events`. Model providers are delivered to Workers only; their keys reach the runtime and no other answer. 404 `skill_hub_not_found` / `plugin_not_found` / `llm_provider_not_found` naming the ids (nothing is changed).",
      auth: rules.org('workers.manage'),
      params: WorkerParams,
      body: WorkerDeliveryBody,
      responses: { 200: WorkerDeliveryItem },
      handler: async ({ principal, params, body }) => ({
        item: await setWorkerDelivery(ctx.deps, actorOf(principal), params.workerId, body),
      }),
    }),
  ]
}

/**
 * `/v1/workers`: hosted runtimes, their runtime status, tokens and heartbeats.
 * @module
 */
import * as v from 'valibot'
import { actorOf } from '../auth.ts'
import type { AsyncContext } from '../jobs/async-context.ts'
import { pageQuery } from '../pagination.ts'
import { rules } from '../policy.ts'
import { idParams } from '../wire/common.ts'
import {
  CreateWorkerBody,
  HeartbeatBody,
  HeartbeatItem,
  IssuedWorkerTokens,
  WorkerItem,
  WorkerLogs,
  WorkerLogsQuery,
  WorkerPage,
  WorkerRuntimeItem,
  WorkerTokenPage,
} from '../wire/workers.ts'
import { recordHeartbeat } from '../workers/worker-lifecycle.ts'
import { workerLogs } from '../workers/worker-logs.ts'
import {
  createWorker,
  deleteWorker,
  getWorker,
  getWorkerRuntime,
  issueWorkerTokens,
  listWorkers,
  listWorkerTokens,
  revokeWorkerTokens,
  WORKER_STATES,
} from '../workers/workers.ts'
import { route } from './route.ts'

const WorkerParams = idParams(['workerId', 'wrk'])

/** Worker routes. */
export function workerRoutes(ctx: AsyncContext) {
  return [
    route({
      method: 'GET',
      path: '/v1/workers',
      operationId: 'listWorkers',
      tags: ['workers'],
      summary: "The organization's Workers, newest first",
      auth: rules.org('workers.read'),
      query: v.object({ ...pageQuery({ max: 50, defaultLimit: 20 }), state: v.optional(v.picklist(WORKER_STATES)) }),
      responses: { 200: WorkerPage },
      errors: [400],
      handler: ({ principal, query }) => listWorkers(ctx, principal.org!.id, query),
    }),
    route({
      method: 'POST',
      path: '/v1/workers',
      operationId: 'createWorker',
      tags: ['workers'],
      summary: 'Create a Worker; provisioning runs asynchronously',
      description:
        '202: the Worker is recorded in state `provisioning`; re-read it by id until it is `healthy` (or `failed`, with `stateReason`). Tokens are issued with `POST /v1/workers/:id/tokens`.',
      auth: rules.org('workers.manage'),
      body: CreateWorkerBody,
      responses: { 202: WorkerItem },
      handler: async ({ principal, body }) => ({ item: await createWorker(ctx, actorOf(principal), body) }),
    }),
    route({
      method: 'GET',
      path: '/v1/workers/:workerId',
      operationId: 'getWorker',
      tags: ['workers'],
      summary: 'One Worker',
      auth: rules.org('workers.read'),
      params: WorkerParams,
      responses: { 200: WorkerItem },
      handler: async ({ principal, params }) => ({ item: await getWorker(ctx, principal.org!.id, params.workerId) }),
    }),
    route({
      method: 'DELETE',
      path: '/v1/workers/:workerId',
      operationId: 'deleteWorker',
      tags: ['workers'],
      summary: 'Stop the runtime and delete the Worker with its tokens',
      description:
        'Revokes the tokens, then answers 204 once the runtime has exited, on whichever control-plane instance ran it (after 5 s a live owner that has not stopped it is taken over).',
      auth: rules.org('workers.manage'),
      params: WorkerParams,
      responses: { 204: { description: 'Deleted' } },
      handler: ({ principal, params }) => deleteWorker(ctx, actorOf(principal), params.workerId),
    }),
    route({
      method: 'GET',
      path: '/v1/workers/:workerId/runtime',
      operationId: 'getWorkerRuntime',
      tags: ['workers'],
      summary: 'Runtime status: state with its reason, version, URL, last heartbeat and last error',
      auth: rules.org('workers.read'),
      params: WorkerParams,
      responses: { 200: WorkerRuntimeItem },
      handler: async ({ principal, params }) => ({
        item: await getWorkerRuntime(ctx, principal.org!.id, params.workerId),
      }),
    }),
    route({
      method: 'GET',
      path: '/v1/workers/:workerId/logs',
      operationId: 'getWorkerLogs',
      tags: ['workers'],
      summary: "The runtime's recent output, newest `tail` lines, secrets redacted",
      description:
        "Kept across runtime restarts and control-plane restarts (the last start's lines are there after a failed start). A `process` runtime's output is on the host that ran it: another host's instance answers 409 `worker_runtime_elsewhere` with `details.host` and `details.instanceId`.",
      auth: rules.org('workers.manage'),
      params: WorkerParams,
      query: WorkerLogsQuery,
      responses: { 200: WorkerLogs },
      errors: [409],
      handler: ({ principal, params, query }) => workerLogs(ctx, principal.org!.id, params.workerId, query.tail),
    }),
    route({
      method: 'GET',
      path: '/v1/workers/:workerId/tokens',
      operationId: 'listWorkerTokens',
      tags: ['workers'],
      summary: "The Worker's tokens (never their values), newest first",
      auth: rules.org('workers.manage'),
      params: WorkerParams,
      query: v.object(pageQuery()),
      responses: { 200: WorkerTokenPage },
      errors: [400],
      handler: ({ principal, params, query }) => listWorkerTokens(ctx, principal.org!.id, params.workerId, query),
    }),
    route({
      method: 'POST',
      path: '/v1/workers/:workerId/tokens',
      operationId: 'issueWorkerTokens',
      tags: ['workers'],
      summary: 'Issue a new client, host and activity token set (shown once)',
      description:
        'The previous set is revoked and the runtime restarts with the new one: the Worker is `provisioning` until its next heartbeat, then the new tokens work against `runtime.url`. The answer comes after the runtime of the previous set has exited, so every revoked token is refused by then; rotations of one Worker are serialized, each getting its own `generation`.',
      auth: rules.org('workers.tokens'),
      params: WorkerParams,
      responses: { 201: IssuedWorkerTokens },
      handler: async ({ principal, params }) => ({
        item: await issueWorkerTokens(ctx, actorOf(principal), params.workerId),
      }),
    }),
    route({
      method: 'DELETE',
      path: '/v1/workers/:workerId/tokens',
      operationId: 'revokeWorkerTokens',
      tags: ['workers'],
      summary: 'Revoke the current token set; the runtime stops (state `stopped`, reason `tokens_revoked`)',
      description: 'Answers 204 once the runtime has exited, on whichever control-plane instance ran it.',
      auth: rules.org('workers.tokens'),
      params: WorkerParams,
      responses: { 204: { description: 'Revoked' } },
      handler: ({ principal, params }) => revokeWorkerTokens(ctx, actorOf(principal), params.workerId),
    }),
    route({
      method: 'POST',
      path: '/v1/workers/:workerId/heartbeat',
      operationId: 'workerHeartbeat',
      tags: ['worker-heartbeat'],
      summary: 'Heartbeat from a Worker runtime, authenticated by its activity token',
      description:
        "401 for a missing, revoked or other Worker's token; 409 `worker_not_running` when the Worker is stopped or failed.",
      auth: rules.workerToken,
      params: WorkerParams,
      body: HeartbeatBody,
      responses: { 200: HeartbeatItem },
      errors: [409],
      handler: async ({ request, params, body }) => ({
        item: await recordHeartbeat(ctx, params.workerId, request.headers.get('authorization'), body),
      }),
    }),
  ]
}

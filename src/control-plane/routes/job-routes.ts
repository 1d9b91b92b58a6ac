/**
 * `/v1/jobs`: the durable job runner's work, visible and retriable.
 * @module
 */
import * as v from 'valibot'
import { actorOf } from '../auth.ts'
import { JOB_STATES } from '../jobs/job-queue.ts'
import { getJob, listJobs, retryJob } from '../jobs/jobs.ts'
import { pageQuery } from '../pagination.ts'
import { rules } from '../policy.ts'
import { idParams } from '../wire/common.ts'
import { JobItem, JobPage } from '../wire/jobs.ts'
import type { AsyncContext } from '../jobs/async-context.ts'
import { route } from './route.ts'

const JobParams = idParams(['jobId', 'job'])

/** Job routes. */
export function jobRoutes(ctx: AsyncContext) {
  return [
    route({
      method: 'GET',
      path: '/v1/jobs',
      operationId: 'listJobs',
      tags: ['jobs'],
      summary: "The organization's asynchronous jobs, newest first",
      auth: rules.org('jobs.read'),
      query: v.object({
        ...pageQuery(),
        status: v.optional(v.picklist(JOB_STATES)),
        kind: v.optional(v.pipe(v.string(), v.maxLength(64))),
      }),
      responses: { 200: JobPage },
      errors: [400],
      handler: ({ principal, query }) => listJobs(ctx.deps, principal.org!.id, query),
    }),
    route({
      method: 'GET',
      path: '/v1/jobs/:jobId',
      operationId: 'getJob',
      tags: ['jobs'],
      summary: 'One job: status, attempts, next run and last failure reason',
      auth: rules.org('jobs.read'),
      params: JobParams,
      responses: { 200: JobItem },
      handler: async ({ principal, params }) => ({ item: await getJob(ctx.deps, principal.org!.id, params.jobId) }),
    }),
    route({
      method: 'POST',
      path: '/v1/jobs/:jobId/retry',
      operationId: 'retryJob',
      tags: ['jobs'],
      summary: 'Put a failed job back in the queue with a fresh attempt budget',
      description:
        '202: accepted; re-read the job (and its subject) by id. 409 `job_not_retriable` unless the job is failed or canceled.',
      auth: rules.org('jobs.manage'),
      params: JobParams,
      responses: { 202: JobItem },
      errors: [409],
      handler: async ({ principal, params }) => ({
        item: await retryJob(ctx.deps, ctx.jobs, actorOf(principal), params.jobId),
      }),
    }),
  ]
}

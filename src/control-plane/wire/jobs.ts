/**
 * Wire schemas of the durable job runner's API.
 * @module
 */
import * as v from 'valibot'
import { JOB_STATES } from '../jobs/job-queue.ts'
import { idOf, itemOf, pageOf, Timestamp } from './common.ts'

/** A failure reason and its message, kept on the object that failed. */
export const FailureReason = v.pipe(
  v.strictObject({
    reason: v.pipe(v.string(), v.description('Stable code, e.g. deadline_exceeded, git_fetch_failed')),
    message: v.string(),
  }),
  v.title('FailureReason'),
)

/** A job. */
export const Job = v.pipe(
  v.strictObject({
    id: idOf('job'),
    kind: v.pipe(v.string(), v.description('connector.sync, connector.discovery, worker.provision')),
    subjectId: v.pipe(
      v.nullable(v.string()),
      v.description('The object the job acts on: a sync event, a discovery or a Worker'),
    ),
    status: v.picklist(JOB_STATES),
    attempts: v.number(),
    maxAttempts: v.number(),
    deadlineMs: v.pipe(v.number(), v.description('Deadline of each attempt')),
    runAt: v.pipe(Timestamp, v.description('When the next attempt may start (queued jobs)')),
    lastError: v.nullable(FailureReason),
    createdAt: Timestamp,
    updatedAt: Timestamp,
    startedAt: v.nullable(Timestamp),
    finishedAt: v.nullable(Timestamp),
  }),
  v.title('Job'),
)
/** A page of jobs. */
export const JobPage = pageOf(Job, 'JobPage')
/** `{item: Job}`. */
export const JobItem = itemOf(Job, 'JobItem')

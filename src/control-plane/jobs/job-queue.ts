/**
 * The job table's write side, for domain code that queues work inside its own transaction:
 * job states, the failure type handlers throw, and enqueue / requeue. The runner that executes
 * jobs is in job-runner.ts.
 * @module
 */
import { newId } from '../../core/ids.ts'
import type { Db } from '../schema.ts'

/** Job states. */
export const JOB_STATES = ['queued', 'running', 'succeeded', 'failed', 'canceled'] as const
/** A job state. */
export type JobState = (typeof JOB_STATES)[number]

/** A failure with a stable reason code; `retriable: false` ends the job at once. */
export class JobFailure extends Error {
  readonly reason: string
  readonly retriable: boolean
  constructor(reason: string, message: string, options: { retriable?: boolean } = {}) {
    super(message)
    this.name = 'JobFailure'
    this.reason = reason
    this.retriable = options.retriable ?? true
  }
}

/** Thrown inside a commit when this attempt no longer holds the job (lease lost, stopped). */
export class LeaseLost extends Error {
  constructor() {
    super('the job is no longer held by this attempt')
    this.name = 'LeaseLost'
  }
}

/** Enqueue options. */
export interface EnqueueInput {
  kind: string
  orgId: string | null
  subjectId?: string | null
  payload?: unknown
  maxAttempts: number
  deadlineMs: number
  /** Delay before the first attempt. */
  delayMs?: number
}

/** ISO text of an epoch-ms time, the stored timestamp format. */
export const iso = (ms: number) => new Date(ms).toISOString()

/** Message text stored and shown: one line, bounded, so a huge stderr never fills a row. */
export function shortMessage(text: string, max = 500): string {
  const line = text.replace(/\s+/g, ' ').trim()
  return line.length > max ? `${line.slice(0, max - 1)}…` : line
}

/** Enqueues a job inside the caller's transaction (so the job exists iff the change commits). */
export async function enqueueJob(db: Db, now: number, input: EnqueueInput): Promise<string> {
  const id = newId('job', now)
  await db
    .insertInto('job')
    .values({
      id,
      org_id: input.orgId,
      kind: input.kind,
      subject_id: input.subjectId ?? null,
      payload: JSON.stringify(input.payload ?? {}),
      status: 'queued',
      attempts: 0,
      max_attempts: input.maxAttempts,
      deadline_ms: input.deadlineMs,
      run_at: iso(now + (input.delayMs ?? 0)),
      locked_by: null,
      lease_until: null,
      last_error: null,
      last_reason: null,
      result: null,
      created_at: iso(now),
      updated_at: iso(now),
      started_at: null,
      finished_at: null,
    })
    .execute()
  return id
}

/** Puts a failed or canceled job back in the queue with a fresh attempt budget. */
export async function requeueJob(db: Db, now: number, jobId: string): Promise<boolean> {
  const result = await db
    .updateTable('job')
    .set({
      status: 'queued',
      attempts: 0,
      run_at: iso(now),
      locked_by: null,
      lease_until: null,
      finished_at: null,
      updated_at: iso(now),
    })
    .where('id', '=', jobId)
    .where('status', 'in', ['failed', 'canceled'])
    .executeTakeFirst()
  return Number(result.numUpdatedRows) === 1
}

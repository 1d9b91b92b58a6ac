/**
 * Table types of the durable job runner (migration 0020).
 * @module
 */

/** `job`: one unit of asynchronous work (discovery, sync, Worker provisioning). */
export interface JobTable {
  id: string
  /** Null for instance-wide housekeeping; otherwise the owning organization. */
  org_id: string | null
  kind: string
  /** The domain object the job acts on (a sync event, a discovery, a Worker). */
  subject_id: string | null
  /** JSON; never secrets (those stay sealed on the subject row). */
  payload: string
  /** `queued | running | succeeded | failed | canceled`. */
  status: string
  attempts: number
  max_attempts: number
  deadline_ms: number
  run_at: string
  locked_by: string | null
  lease_until: string | null
  last_error: string | null
  last_reason: string | null
  result: string | null
  created_at: string
  updated_at: string
  started_at: string | null
  finished_at: string | null
}

/**
 * Table types of hosted Workers (migrations 0021, 0030).
 * @module
 */

/** `worker`: an organization-managed runtime and its last known state. */
export interface WorkerTable {
  id: string
  org_id: string
  name: string
  description: string | null
  provisioner: string
  /** `provisioning | healthy | unreachable | stopped | failed`. */
  state: string
  /** Why the Worker is in its state (e.g. `heartbeat_stale`, `provisioning_deadline_exceeded`). */
  state_reason: string | null
  state_message: string | null
  version: string | null
  runtime_url: string | null
  runtime_pid: number | null
  workspace_dir: string | null
  last_heartbeat_at: string | null
  last_active_at: string | null
  open_session_count: number | null
  last_error_reason: string | null
  last_error_message: string | null
  last_error_at: string | null
  provisioning_deadline_at: string | null
  /** The current token set, sealed with the secret box (the runtime is launched with it). */
  credentials_sealed: string | null
  token_generation: number
  /** Control-plane instance that owns (started, or is starting) the runtime; null when none does. */
  runtime_instance_id: string | null
  /** Host name of that instance: only a control plane on the same host can signal `runtime_pid`. */
  runtime_host: string | null
  /** Token generation the runtime was started with (older than `token_generation` = must stop). */
  runtime_generation: number | null
  created_by_member_id: string | null
  created_at: string
  updated_at: string
}

/** `worker_token`: one issued Worker token, stored as its SHA-256. */
export interface WorkerTokenTable {
  id: string
  worker_id: string
  org_id: string
  /** `client | host | activity`. */
  scope: string
  token_hash: string
  generation: number
  created_at: string
  revoked_at: string | null
}

/** `control_plane_instance`: one running (or once running) control plane sharing this database. */
export interface ControlPlaneInstanceTable {
  id: string
  host: string
  pid: number
  started_at: string
  /** Renewed every `workers.instanceHeartbeatMs`; older than `workers.instanceStaleAfterMs` = gone. */
  heartbeat_at: string
  /** Set on a graceful stop, or by another instance that found this one dead. */
  stopped_at: string | null
}

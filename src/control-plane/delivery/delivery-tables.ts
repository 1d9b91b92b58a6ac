/**
 * Row types of the delivery tables (migrations 0065–0066), beside the code that reads them;
 * `schema.ts` composes them into the database interface.
 * @module
 */

/** `plugin_assignment`: a plugin delivered to a member, a team or the organization. */
export interface PluginAssignmentTable {
  id: string
  org_id: string
  plugin_id: string
  member_id: string | null
  team_id: string | null
  org_wide: number
  principal_key: string
  created_by_member_id: string | null
  created_at: string
}

/** `worker_delivery`: a hub, plugin or model provider a Worker receives. */
export interface WorkerDeliveryTable {
  worker_id: string
  org_id: string
  /** `hub | plugin | llm_provider`. */
  kind: string
  target_id: string
  created_at: string
}

/** `delivery_capability`: an unguessable skills URL handed to stock OpenCode for one credential. */
export interface DeliveryCapabilityTable {
  id: string
  org_id: string
  member_id: string
  /** `oauth | apiKey | session`. */
  credential_kind: string
  /** The OAuth grant, API key or session the URL lives with. */
  credential_id: string
  /** The path secret, sealed with the secret box (bound to the row id). */
  secret_sealed: string
  secret_hash: string
  created_at: string
}

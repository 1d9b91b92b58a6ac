/**
 * Row type of `idempotency_key` (migration 0050), beside the store that reads it; `schema.ts`
 * composes it into the database interface.
 * @module
 */

/** An idempotency key of one caller scope (`user:`, `key:`, `worker:`), see idempotency/. */
export interface IdempotencyKeyTable {
  scope: string
  key: string
  /** SHA-256 (hex) of the method, target, X-Service-Org-Id header and body of the first request. */
  fingerprint: string
  /** Random token of the run holding the key; a transaction counts a commit only while it matches. */
  owner: string
  /** ISO time until which a run in progress holds the key; after it, another may take it over. */
  lease_until: string
  /** Transactions of the run that committed (0: nothing was written through a transaction). */
  commits: number
  /** The answer's status once recorded, else null. */
  status: number | null
  /** The answer (status, headers, body), sealed with the secret box: it may hold a secret shown once. */
  answer: string | null
  created_at: string
  expires_at: string
}

/**
 * The `idempotency_key` table: claiming a key before a request runs, counting each of its commits
 * inside the committing transaction, recording its answer, and sweeping expired keys.
 *
 * A key moves through: claimed (a run holds it until `lease_until`), committed (`commits` > 0,
 * written by the request's own transactions, so it commits with the write or not at all),
 * answered (`status` and the sealed `answer`). A repeat of an answered key replays the answer; of
 * a held key, 409 in progress; of a key whose run vanished (its lease passed) with nothing
 * committed, a new run takes it over; with something committed but no answer, 409
 * `idempotency_answer_lost` (the work must not run twice).
 * @module
 */
import { sql, type Kysely } from 'kysely'
import { randomBytes } from '../../core/random-bytes.ts'
import { DatabaseUnavailableError } from '../../core/errors.ts'
import type { ApiError } from '../../core/errors.ts'
import { controlPlaneError } from '../control-plane-errors.ts'
import type { Deps } from '../deps.ts'
import type { ControlPlaneDb } from '../schema.ts'

/**
 * How long a claim holds its key without being renewed. A run renews it every third of this
 * ({@link renewLease}), so a claim whose run is gone (its instance died, or the claim's own
 * answer was lost with its connection and nobody runs it) is taken over within seconds.
 */
export const LEASE_MS = 6_000

/** Answers larger than this are not kept; a repeat gets 409 `idempotency_answer_lost`. */
export const MAX_ANSWER_BYTES = 4 * 1024 * 1024

/** A key held by one run. */
export interface Claim {
  scope: string
  key: string
  owner: string
}

/** An answer as recorded: status, the headers worth repeating, and the body. */
export interface StoredAnswer {
  status: number
  headers: Array<[string, string]>
  body: Uint8Array | null
}

/** What claiming a key decided: run the request, or answer with the first run's answer. */
export type ClaimResult = { claim: Claim } | { replay: StoredAnswer }

const iso = (ms: number) => new Date(ms).toISOString()

/** 409 `idempotency_key_in_progress` with the seconds until the holder's lease ends (1–5). */
export function keyInProgress(retryAfterSeconds = 1): ApiError {
  const seconds = String(Math.min(5, Math.max(1, Math.ceil(retryAfterSeconds))))
  return controlPlaneError('idempotency_key_in_progress', 'A request with this Idempotency-Key is still running', {
    headers: { 'retry-after': seconds },
  })
}

function answerLost(reason: 'interrupted' | 'too_large'): ApiError {
  return controlPlaneError(
    'idempotency_answer_lost',
    'The request with this Idempotency-Key was carried out, but its answer was not kept; read the resource to see the result',
    { details: { reason } },
  )
}

const sealContext = (scope: string, key: string) => `idempotency:${scope}:${key}`

function openAnswer(deps: Deps, scope: string, key: string, sealed: string): StoredAnswer {
  const parsed = JSON.parse(deps.secrets.open(sealed, sealContext(scope, key))) as {
    status: number
    headers: Array<[string, string]>
    body: string | null
  }
  return {
    status: parsed.status,
    headers: parsed.headers,
    body: parsed.body === null ? null : new Uint8Array(Buffer.from(parsed.body, 'base64')),
  }
}

/**
 * Claims `key` for a new run, or tells how to answer instead: the first run's answer (same
 * fingerprint, answered), 422 `idempotency_key_reused` (another fingerprint), 409 in progress.
 * Runs outside any transaction: the claim must be visible to other instances at once.
 */
export async function claimKey(
  deps: Deps,
  scope: string,
  key: string,
  fingerprint: string,
  ttlMs: number,
): Promise<ClaimResult> {
  const db = deps.db
  for (let round = 0; round < 4; round++) {
    const now = deps.now()
    const owner = randomBytes(16).toString('hex')
    const inserted = await db
      .insertInto('idempotency_key')
      .values({
        scope,
        key,
        fingerprint,
        owner,
        lease_until: iso(now + LEASE_MS),
        commits: 0,
        status: null,
        answer: null,
        created_at: iso(now),
        expires_at: iso(now + ttlMs),
      })
      .onConflict((oc) => oc.columns(['scope', 'key']).doNothing())
      .returning('owner')
      .executeTakeFirst()
    if (inserted) return { claim: { scope, key, owner } }
    const row = await db
      .selectFrom('idempotency_key')
      .selectAll()
      .where('scope', '=', scope)
      .where('key', '=', key)
      .executeTakeFirst()
    if (!row) continue
    if (row.expires_at <= iso(now)) {
      // Expired but not swept yet: it counts as never used.
      await db
        .deleteFrom('idempotency_key')
        .where('scope', '=', scope)
        .where('key', '=', key)
        .where('owner', '=', row.owner)
        .execute()
      continue
    }
    if (row.fingerprint !== fingerprint)
      throw controlPlaneError(
        'idempotency_key_reused',
        'This Idempotency-Key was used for a different request; send a new key for a new request',
      )
    if (row.status !== null) {
      if (row.answer === null) throw answerLost('too_large')
      return { replay: openAnswer(deps, scope, key, row.answer) }
    }
    const leaseLeft = Date.parse(row.lease_until) - now
    if (leaseLeft > 0) throw keyInProgress(leaseLeft / 1000)
    if (row.commits > 0) throw answerLost('interrupted')
    // The run that held the key vanished before committing anything: this request runs instead.
    // Its transactions would now find another owner and roll back (see markCommit).
    const taken = await db
      .updateTable('idempotency_key')
      .set({ owner, lease_until: iso(now + LEASE_MS) })
      .where('scope', '=', scope)
      .where('key', '=', key)
      .where('owner', '=', row.owner)
      .where('commits', '=', 0)
      .where('status', 'is', null)
      .executeTakeFirst()
    if (Number(taken.numUpdatedRows) === 1) return { claim: { scope, key, owner } }
  }
  throw keyInProgress()
}

/**
 * Counts commit number `commitNumber` of the run, inside the transaction that is about to commit.
 * Another owner means the run's lease ran out and another request took the key over: this
 * transaction must not commit (the work would be done twice).
 */
export async function markCommit(trx: Kysely<ControlPlaneDb>, claim: Claim, commitNumber: number): Promise<void> {
  const updated = await trx
    .updateTable('idempotency_key')
    .set({ commits: commitNumber })
    .where('scope', '=', claim.scope)
    .where('key', '=', claim.key)
    .where('owner', '=', claim.owner)
    .executeTakeFirst()
  if (Number(updated.numUpdatedRows) !== 1) throw keyInProgress()
}

/** Runs a statement again after a lost connection, a few times over about a second and a half. */
async function persist<T>(work: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await work()
    } catch (error) {
      if (!(error instanceof DatabaseUnavailableError) || attempt >= 4) throw error
      await new Promise((resolve) => setTimeout(resolve, 100 * 2 ** attempt))
    }
  }
}

/**
 * Whether commit number `commitNumber` of the run took effect, asked after the connection failed
 * while COMMIT was on its way: the count is written by that very transaction.
 */
export function commitTookEffect(deps: Deps, claim: Claim, commitNumber: number): Promise<boolean> {
  return persist(async () => {
    const row = await deps.db
      .selectFrom('idempotency_key')
      .select(['owner', 'commits'])
      .where('scope', '=', claim.scope)
      .where('key', '=', claim.key)
      .executeTakeFirst()
    return row !== undefined && row.owner === claim.owner && row.commits >= commitNumber
  })
}

/** Records the run's answer (sealed: it may hold a secret shown once), ending its lease. */
export async function recordAnswer(deps: Deps, claim: Claim, answer: StoredAnswer): Promise<void> {
  const tooLarge = (answer.body?.byteLength ?? 0) > MAX_ANSWER_BYTES
  const sealed = tooLarge
    ? null
    : deps.secrets.seal(
        JSON.stringify({
          status: answer.status,
          headers: answer.headers,
          body: answer.body === null ? null : Buffer.from(answer.body).toString('base64'),
        }),
        sealContext(claim.scope, claim.key),
      )
  await persist(() =>
    deps.db
      .updateTable('idempotency_key')
      .set({ status: answer.status, answer: sealed, lease_until: iso(deps.now()) })
      .where('scope', '=', claim.scope)
      .where('key', '=', claim.key)
      .where('owner', '=', claim.owner)
      .execute(),
  )
}

/**
 * Frees the key of a run that committed nothing (it failed before any write), so a repeat runs
 * again; a run that did commit keeps its key whatever this finds. True when the key was freed.
 */
export async function releaseKey(deps: Deps, claim: Claim): Promise<boolean> {
  const result = await persist(() =>
    deps.db
      .deleteFrom('idempotency_key')
      .where('scope', '=', claim.scope)
      .where('key', '=', claim.key)
      .where('owner', '=', claim.owner)
      .where('commits', '=', 0)
      .executeTakeFirst(),
  )
  return Number(result.numDeletedRows) === 1
}

/** Extends the lease of a run still going (unless it lost the key). */
export async function renewLease(deps: Deps, claim: Claim): Promise<void> {
  await deps.db
    .updateTable('idempotency_key')
    .set({ lease_until: iso(deps.now() + LEASE_MS) })
    .where('scope', '=', claim.scope)
    .where('key', '=', claim.key)
    .where('owner', '=', claim.owner)
    .where('status', 'is', null)
    .execute()
}

/** Ends the lease of a run that committed but has no answer to keep: repeats learn that at once. */
export async function abandonKey(deps: Deps, claim: Claim): Promise<void> {
  await persist(() =>
    deps.db
      .updateTable('idempotency_key')
      .set({ lease_until: iso(deps.now()) })
      .where('scope', '=', claim.scope)
      .where('key', '=', claim.key)
      .where('owner', '=', claim.owner)
      .execute(),
  )
}

/**
 * Deletes expired keys, `batch` rows per statement and at most `maxBatches` statements, so a large
 * backlog never holds a long lock; returns how many were deleted.
 */
export async function sweepExpiredKeys(deps: Deps, batch = 500, maxBatches = 20): Promise<number> {
  const now = iso(deps.now())
  let total = 0
  for (let round = 0; round < maxBatches; round++) {
    const result = await deps.db
      .deleteFrom('idempotency_key')
      .where(
        sql<boolean>`(scope, key) in (select scope, key from idempotency_key where expires_at <= ${now} limit ${batch})`,
      )
      .executeTakeFirst()
    const deleted = Number(result.numDeletedRows)
    total += deleted
    if (deleted < batch) break
  }
  return total
}

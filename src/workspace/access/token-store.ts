/**
 * Issued client tokens: created by the host with a scope, an optional label and an optional
 * expiry, stored only as sha256 hashes, revocable. Lookups run from an in-memory index so
 * authenticating a request costs no query; `lastUsedAt` is written back at most once a minute
 * per token so reads do not turn into writes.
 * @module
 */
import { newId } from '../../core/ids.ts'
import { generateToken, hashToken } from '../../core/secrets.ts'
import type { Scope } from './scopes.ts'
import type { StateDatabase, TokensTable } from '../base/state-db.ts'

/** A token as the host sees it: never the value, never the hash. */
export interface TokenInfo {
  id: string
  scope: Scope
  label: string | null
  createdAt: number
  expiresAt: number | null
  lastUsedAt: number | null
}

/** The result of a lookup by presented value. */
export type TokenLookup =
  | { status: 'valid'; token: TokenInfo; hash: string }
  | { status: 'expired' }
  | { status: 'unknown' }

const TOKEN_PREFIX = 'svc_tk_'
const LAST_USED_WRITE_INTERVAL_MS = 60_000

interface Entry {
  info: TokenInfo
  hash: string
  persistedLastUsed: number | null
}

const toMs = (iso: string | null): number | null => (iso ? Date.parse(iso) : null)
const toIso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString())

/** The issued-token store over the state database. */
export class TokenStore {
  readonly #db: StateDatabase
  readonly #now: () => number
  readonly #byHash = new Map<string, Entry>()

  private constructor(db: StateDatabase, now: () => number) {
    this.#db = db
    this.#now = now
  }

  /** Loads every stored token into the index. */
  static async open(db: StateDatabase, now: () => number = Date.now): Promise<TokenStore> {
    const store = new TokenStore(db, now)
    const rows = db.all<TokensTable>('select * from tokens')
    for (const row of rows) store.#index(row)
    return store
  }

  #index(row: TokensTable): Entry {
    const entry: Entry = {
      hash: row.hash,
      persistedLastUsed: toMs(row.last_used_at),
      info: {
        id: row.id,
        scope: row.scope as Scope,
        label: row.label,
        createdAt: toMs(row.created_at)!,
        expiresAt: toMs(row.expires_at),
        lastUsedAt: toMs(row.last_used_at),
      },
    }
    this.#byHash.set(row.hash, entry)
    return entry
  }

  /** Every token, newest first. */
  list(): TokenInfo[] {
    return [...this.#byHash.values()]
      .map((e) => ({ ...e.info }))
      .sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : -1))
  }

  /** Issues a token; the plaintext is returned here and nowhere else. */
  async create(input: { scope: Scope; label?: string; ttlSeconds?: number }): Promise<TokenInfo & { token: string }> {
    const now = this.#now()
    const token = generateToken(TOKEN_PREFIX)
    const row: TokensTable = {
      id: newId('tok', now),
      hash: hashToken(token),
      scope: input.scope,
      label: input.label?.trim() || null,
      created_at: new Date(now).toISOString(),
      expires_at: input.ttlSeconds ? new Date(now + input.ttlSeconds * 1000).toISOString() : null,
      last_used_at: null,
    }
    this.#db.run(
      'insert into tokens (id, hash, scope, label, created_at, expires_at, last_used_at) values (?, ?, ?, ?, ?, ?, ?)',
      [row.id, row.hash, row.scope, row.label, row.created_at, row.expires_at, row.last_used_at],
    )
    const entry = this.#index(row)
    return { ...entry.info, token }
  }

  /** Revokes a token by id; false when there is no such token. */
  async revoke(id: string): Promise<boolean> {
    const entry = [...this.#byHash.values()].find((e) => e.info.id === id)
    if (!entry) return false
    this.#db.run('delete from tokens where id = ?', [id])
    this.#byHash.delete(entry.hash)
    return true
  }

  /** Finds a presented token value; expired tokens are reported as such, not as unknown. */
  lookup(value: string): TokenLookup {
    return this.lookupHash(hashToken(value))
  }

  /** {@link lookup} for a value already hashed with `hashToken`. */
  lookupHash(hash: string): TokenLookup {
    const entry = this.#byHash.get(hash)
    if (!entry) return { status: 'unknown' }
    const now = this.#now()
    if (entry.info.expiresAt !== null && entry.info.expiresAt <= now) return { status: 'expired' }
    entry.info.lastUsedAt = now
    if (entry.persistedLastUsed === null || now - entry.persistedLastUsed >= LAST_USED_WRITE_INTERVAL_MS) {
      entry.persistedLastUsed = now
      // A lost lastUsedAt update must never fail the request that used the token.
      try {
        this.#db.run('update tokens set last_used_at = ? where id = ?', [toIso(now), entry.info.id])
      } catch {
        // A busy or read-only database: the next use retries.
      }
    }
    return { status: 'valid', token: { ...entry.info }, hash }
  }
}

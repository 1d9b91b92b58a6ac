/**
 * Workspace-mode console sign-in: a one-time code printed at start (carried in the link's
 * fragment, so it never reaches a server log or a Referer) or the host token is exchanged for a
 * console session. Sessions live in this process's memory only: a restart signs every console
 * out, and nothing about them is written to disk.
 *
 * A session is an owner-scoped bearer credential, so the console reaches the same routes the
 * host can (host routes accept an owner bearer) and the viewer routes the host token alone cannot.
 * @module
 */
import { generateToken, hashToken } from '../core/secrets.ts'

/** A session's lifetime from its creation. */
export const CONSOLE_SESSION_TTL_MS = 12 * 3600_000
/** How long the printed one-time code may be redeemed after start. */
export const CONSOLE_CODE_TTL_MS = 3600_000
/** Sessions kept at most; the oldest is dropped first (a loop of sign-ins cannot grow memory). */
const MAX_SESSIONS = 64

/** A created session: the value is returned once, to the browser that asked. */
export interface ConsoleSession {
  token: string
  expiresAt: number
}

/** The one-time code and the live sessions. */
export class ConsoleSessions {
  readonly #now: () => number
  /** Digest of the one-time code, until it is redeemed or expires. */
  #codeDigest: string | null = null
  #codeExpiresAt = 0
  /** Session digest → expiry. */
  readonly #sessions = new Map<string, number>()

  constructor(now: () => number = Date.now) {
    this.#now = now
  }

  /** Makes a new one-time code (replacing any earlier one) and returns it for the start-up banner. */
  issueCode(): string {
    const code = generateToken('svc_once_')
    this.#codeDigest = hashToken(code)
    this.#codeExpiresAt = this.#now() + CONSOLE_CODE_TTL_MS
    return code
  }

  /** Redeems the one-time code: a session when it matches and is fresh, else null. It works once. */
  redeem(code: string): ConsoleSession | null {
    if (!this.#codeDigest || this.#now() > this.#codeExpiresAt) return null
    // Digests of 256-bit values: equality of the digests is equality of the codes, and a lookup by
    // digest (as the token store does) reveals nothing useful about a guess.
    if (hashToken(code) !== this.#codeDigest) return null
    this.#codeDigest = null
    return this.create()
  }

  /** Creates a session for a caller that already proved host rights. */
  create(): ConsoleSession {
    const token = generateToken('svc_console_')
    const expiresAt = this.#now() + CONSOLE_SESSION_TTL_MS
    if (this.#sessions.size >= MAX_SESSIONS) this.#sessions.delete(this.#sessions.keys().next().value!)
    this.#sessions.set(hashToken(token), expiresAt)
    return { token, expiresAt }
  }

  /** The digest of `token` when it is a live session, else null (an expired one is forgotten). */
  check(token: string): string | null {
    if (!token.startsWith('svc_console_')) return null
    const digest = hashToken(token)
    const expiresAt = this.#sessions.get(digest)
    if (expiresAt === undefined) return null
    if (this.#now() > expiresAt) {
      this.#sessions.delete(digest)
      return null
    }
    return digest
  }

  /** Ends a session (sign-out); true when it existed. */
  end(token: string): boolean {
    return this.#sessions.delete(hashToken(token))
  }
}

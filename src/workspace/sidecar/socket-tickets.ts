/**
 * Short-lived, single-use tickets that let a browser open a relayed WebSocket.
 *
 * Browsers cannot set headers on a WebSocket, and the long-lived bearer token must never travel in a
 * URL (it ends up in logs and history). A client that holds a token asks for a ticket with an
 * authenticated POST (the connect-token route of the PTY it wants), then opens the socket with
 * `?ticket=`. A ticket is bound to one workspace and one proxied path, is stored only as a hash,
 * works once, and expires after {@link TICKET_TTL_MS}.
 * @module
 */
import { generateToken, hashToken } from '../../core/secrets.ts'
import type { Principal } from '../access/auth.ts'

/** How long a ticket is valid. */
export const TICKET_TTL_MS = 30_000
/** Most unexpired tickets held at once; the oldest is dropped first. */
const MAX_TICKETS = 4096

interface TicketRecord {
  workspaceId: string
  /** The lower-cased proxied path the ticket opens (`/pty/pty_1/connect`). */
  path: string
  principal: Principal
  expiresAt: number
}

/** The ticket store of one server. */
export class SocketTickets {
  readonly #tickets = new Map<string, TicketRecord>()
  readonly #now: () => number

  constructor(now: () => number = Date.now) {
    this.#now = now
  }

  /** Issues a ticket for `principal` to open `path` on `workspaceId`'s sidecar mount. */
  issue(input: { workspaceId: string; path: string; principal: Principal }): { ticket: string; expiresInMs: number } {
    this.#sweep()
    while (this.#tickets.size >= MAX_TICKETS) this.#tickets.delete(this.#tickets.keys().next().value!)
    const ticket = generateToken('wst')
    this.#tickets.set(hashToken(ticket), {
      workspaceId: input.workspaceId,
      path: input.path.toLowerCase(),
      // The principal is copied so a later change to the caller's object cannot widen the ticket.
      principal: { ...input.principal },
      expiresAt: this.#now() + TICKET_TTL_MS,
    })
    return { ticket, expiresInMs: TICKET_TTL_MS }
  }

  /**
   * Consumes a ticket: the principal it was issued to when it is unexpired and bound to this
   * workspace and path, else null. A ticket presented for the wrong path is burnt as well.
   */
  consume(ticket: string, workspaceId: string, path: string): Principal | null {
    const key = hashToken(ticket)
    const record = this.#tickets.get(key)
    if (!record) return null
    this.#tickets.delete(key)
    if (record.expiresAt <= this.#now()) return null
    if (record.workspaceId !== workspaceId || record.path !== path.toLowerCase()) return null
    return record.principal
  }

  #sweep(): void {
    const now = this.#now()
    for (const [key, record] of this.#tickets) if (record.expiresAt <= now) this.#tickets.delete(key)
  }
}

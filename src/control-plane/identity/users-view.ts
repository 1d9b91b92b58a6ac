/**
 * The public view of a user: what any response may show. Never includes the password hash.
 * @module
 */

/** A user as the API shows it. */
export interface UserView {
  id: string
  email: string
  name: string
  createdAt: string
}

/** Maps a row (or joined row) to the public view. */
export function toUserView(row: { id: string; email: string; name: string; created_at: string }): UserView {
  return { id: row.id, email: row.email, name: row.name, createdAt: row.created_at }
}

/** Canonical form of an email for lookup and uniqueness. */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase()
}

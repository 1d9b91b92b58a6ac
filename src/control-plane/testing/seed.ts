/**
 * Bulk seeding straight into the database, for tests and benchmarks that need thousands of
 * members: going through sign-up would spend most of the time in the password KDF. Rows are
 * exactly what the API would write (same id kinds and timestamps); the password hash is a fixed
 * non-verifying marker, so seeded users cannot sign in.
 * @module
 */
import type { Kysely } from 'kysely'
import { newId } from '../../core/ids.ts'
import type { ControlPlaneDb } from '../schema.ts'

/** Inserts `count` users, each a `member` of `orgId`, in one transaction; returns the member ids. */
export async function seedMembers(
  db: Kysely<ControlPlaneDb>,
  orgId: string,
  count: number,
  label = 'seed',
): Promise<string[]> {
  const ids: string[] = []
  const now = new Date().toISOString()
  await db.transaction().execute(async (trx) => {
    for (let start = 0; start < count; start += 200) {
      const users = []
      const members = []
      for (let i = start; i < Math.min(count, start + 200); i++) {
        const userId = newId('usr')
        const memberId = newId('mem')
        users.push({
          id: userId,
          email: `${label}-${i}@seed.test`,
          name: `${label} ${i}`,
          password_hash: 'seeded$no-sign-in',
          created_at: now,
          updated_at: now,
        })
        members.push({ id: memberId, org_id: orgId, user_id: userId, role: 'member', created_at: now, updated_at: now })
        ids.push(memberId)
      }
      await trx.insertInto('app_user').values(users).execute()
      await trx.insertInto('member').values(members).execute()
    }
  })
  return ids
}

/**
 * Who sees a `delivery.changed` event in the change feed (written by `delivery-events.ts`).
 * @module
 */
import type { Db } from '../schema.ts'

/** The feed kind. */
export const DELIVERY_CHANGED = 'delivery.changed'

/** Who reads the feed: a member (with their member id) or a Worker's runtime. */
export type FeedReader = { memberId: string; workerId?: undefined } | { workerId: string; memberId?: undefined }

/**
 * True when a `delivery.changed` event concerns the reader: organization-wide events every member,
 * team events the teams' current members, member and Worker events the ones they name.
 */
export async function deliveryEventConcerns(
  db: Db,
  reader: FeedReader,
  data: Record<string, unknown> | null,
): Promise<boolean> {
  const ids = (key: string) => (Array.isArray(data?.[key]) ? (data[key] as unknown[]) : [])
  if (reader.workerId !== undefined) return data?.scope === 'worker' && ids('workerIds').includes(reader.workerId)
  switch (data?.scope) {
    case 'organization':
      return true
    case 'member':
      return ids('memberIds').includes(reader.memberId)
    case 'team': {
      const teams = ids('teamIds').filter((t): t is string => typeof t === 'string')
      if (teams.length === 0) return false
      const row = await db
        .selectFrom('team_member')
        .select('team_id')
        .where('member_id', '=', reader.memberId)
        .where('team_id', 'in', teams)
        .executeTakeFirst()
      return row !== undefined
    }
    default:
      return false
  }
}

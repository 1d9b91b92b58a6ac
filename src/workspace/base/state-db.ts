/**
 * The workspace server's own SQLite database (`<dataDir>/workspace-state.sqlite`, mode 0600):
 * issued tokens, persisted events and the audit log. The row types live here so each store module
 * reads the same shapes.
 * @module
 */
import { join } from 'node:path'
import { workspaceMigrations } from '../../../migrations/workspace/index.ts'
import { openLocalDatabase, type LocalDatabase } from '../../storage/local-database.ts'

/** `tokens`: issued tokens; only the sha256 of the value is kept. */
export interface TokensTable {
  id: string
  hash: string
  scope: string
  label: string | null
  created_at: string
  expires_at: string | null
  last_used_at: string | null
}

/** `events`: workspace events; `seq` is global and orders every stream. */
export interface EventsTable {
  seq: number
  id: string
  workspace_id: string
  type: string
  payload: string
  created_at: string
}

/** `audit`: one row per completed write or approval decision. */
export interface AuditTable {
  seq: number
  id: string
  workspace_id: string
  actor: string
  action: string
  target: string
  summary: string
  created_at: string
}

/** The state database handle (`local-database.ts`: fixed SQL on the runtime's SQLite). */
export type StateDatabase = LocalDatabase

/** Opens (and migrates) the state database in `dataDir`, or in memory for `:memory:`. */
export function openStateDatabase(dataDir: string): Promise<StateDatabase> {
  const path = dataDir === ':memory:' ? ':memory:' : join(dataDir, 'workspace-state.sqlite')
  return openLocalDatabase({ path, migrations: workspaceMigrations })
}

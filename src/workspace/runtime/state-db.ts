/**
 * The workspace server's own SQLite database (`<dataDir>/workspace-state.sqlite`, mode 0600):
 * issued tokens, persisted events and the audit log. Table types live here so each store module
 * shares one kysely schema.
 * @module
 */
import { join } from 'node:path'
import { workspaceMigrations } from '../../../migrations/workspace/index.ts'
import { openDatabase, type Database } from '../../storage/database.ts'

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
  seq: number | undefined
  id: string
  workspace_id: string
  type: string
  payload: string
  created_at: string
}

/** `audit`: one row per completed write or approval decision. */
export interface AuditTable {
  seq: number | undefined
  id: string
  workspace_id: string
  actor: string
  action: string
  target: string
  summary: string
  created_at: string
}

/** The kysely schema of the state database. */
export interface WorkspaceStateSchema {
  tokens: TokensTable
  events: EventsTable
  audit: AuditTable
}

/** The state database handle. */
export type StateDatabase = Database<WorkspaceStateSchema>

/** Opens (and migrates) the state database in `dataDir`, or in memory for `:memory:`. */
export function openStateDatabase(dataDir: string): Promise<StateDatabase> {
  const path = dataDir === ':memory:' ? ':memory:' : join(dataDir, 'workspace-state.sqlite')
  return openDatabase<WorkspaceStateSchema>({ path, migrations: workspaceMigrations })
}

/**
 * Workspace-server migrations, imported statically so a compiled binary carries them
 * (a file-based provider cannot read `/$bunfs` inside `bun build --compile` output).
 * Add a migration: create `NNNN_name.ts` exporting `up`, then list it here.
 */
import type { LocalMigrationSet } from '../../src/storage/local-database.ts'
import * as m0001 from './0001_state.ts'

export const workspaceMigrations: LocalMigrationSet = {
  '0001_state': m0001,
}

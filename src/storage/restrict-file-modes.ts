/**
 * Owner-only modes for a SQLite database and its WAL and shared-memory files.
 * @module
 */
import { chmodSync, existsSync } from 'node:fs'

/** Why: the databases hold token hashes and encrypted secrets; other local users should not read them at all. */
export function restrictFileModes(path: string): void {
  for (const file of [path, `${path}-wal`, `${path}-shm`]) {
    if (existsSync(file)) chmodSync(file, 0o600)
  }
}

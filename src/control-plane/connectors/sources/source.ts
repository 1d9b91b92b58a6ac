/**
 * What discovery and sync read from a connector target, whatever its type: one immutable
 * snapshot at a revision (a commit), listing every file with its size and reading the ones asked
 * for. Failures carry a stable reason and whether trying again may help, so the job runner can
 * retry network trouble and stop at once on a wrong URL or credential.
 * @module
 */
import { JobFailure } from '../../jobs/job-queue.ts'

/** One file of a snapshot. */
export interface SourceEntry {
  path: string
  size: number
  /** Content id (a git blob sha) used to read it. */
  sha: string
  /** Git mode 100755: restored as an executable file (skill scripts). */
  executable?: boolean
  /** Git mode 120000: a symbolic link, never imported as a file. */
  symlink?: boolean
}

/** A source at one revision. */
export interface SourceSnapshot {
  /** The commit the snapshot is of. */
  revision: string
  /** Every file (blobs only), in path order. */
  entries: SourceEntry[]
  /** Reads the given files as UTF-8 text; keys are paths. */
  read(entries: SourceEntry[], signal: AbortSignal): Promise<Map<string, string>>
  /** Reads the given files byte for byte (skill assets may be binary); keys are paths. */
  readBytes(entries: SourceEntry[], signal: AbortSignal): Promise<Map<string, Uint8Array>>
  /** Releases local resources (a temporary clone). */
  close(): Promise<void>
}

/** How to reach one target. */
export interface SourceLocation {
  connectorType: 'git' | 'github'
  /** git: a clone URL; github: `owner/repo`. */
  remoteId: string
  /** Branch to read; the remote's default branch when absent. */
  branch: string | null
  /** A token from the account's sealed credentials, if any. */
  token: string | null
  /**
   * The account's own remote id: where its token may go. For `git` a token is only sent to an
   * https:// URL on the same host and port and under the same path (see `checkCredentialScope`).
   */
  accountRemoteId: string
}

/** A source failure: `retriable` for network and server trouble, not for bad input. */
export function sourceFailure(reason: string, message: string, retriable: boolean): JobFailure {
  return new JobFailure(reason, message, { retriable })
}

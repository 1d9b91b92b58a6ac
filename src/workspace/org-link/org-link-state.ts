/**
 * What a workspace's organization link keeps across restarts, one file per workspace in the data
 * dir (`<dataDir>/org-link/<workspaceId>.json`, directory 0700, file 0600): the control plane,
 * the organization and member, the feed position (`Last-Event-ID`), the manifest of managed
 * files (path → sha256, objectId, versionId), open conflicts, what the host chose to keep, and the
 * tokens **sealed** with the workspace's secret box (AES-256-GCM, key from
 * `SERVICE_ENCRYPTION_KEY` or `<dataDir>/encryption.key`, 0600; the same box the control plane
 * uses), bound to the workspace id, so the file alone does not reveal them. A Worker's link keeps
 * no token: its activity token comes from the environment on every start.
 * @module
 */
import * as fsp from 'node:fs/promises'
import { join } from 'node:path'
import { ensureDir, isNotFound, writeFileAtomic } from '../../storage/fs.ts'
import type { SecretBox } from '../../storage/secret-box.ts'

/** One managed file (or MCP entry, keyed `mcp/<name>`). */
export interface ManifestEntry {
  sha256: string
  objectId: string
  versionId: string
  type: string
  name: string
  executable?: boolean
}

/** A place where the organization's content and the person's differ; kept as the person has it. */
export interface OrgConflict {
  /** Workspace-relative file, skill folder (`.opencode/skills/<name>`), or `mcp/<name>`. */
  path: string
  kind: 'file' | 'skill' | 'mcp'
  reason: 'edited_locally' | 'deleted_locally' | 'local_file' | 'local_skill' | 'local_mcp'
  objectId: string
  type: string
  name: string
  versionId: string
  /** sha256 of what is on disk (null: nothing there). For a skill folder: over its files. */
  localSha256: string | null
  /** sha256 of the organization's content (for a skill folder: the item digest). */
  organizationSha256: string
  detectedAt: number
}

/** The persisted link. */
export interface OrgLinkRecord {
  workspaceId: string
  controlPlaneUrl: string
  /** `device` (linked by the host) or `worker` (the Worker's own token from the environment). */
  via: 'device' | 'worker'
  sealedAccessToken: string | null
  sealedRefreshToken: string | null
  accessExpiresAt: number | null
  organization: { id: string; name: string } | null
  member: Record<string, unknown> | null
  lastEventId: string | null
  lastSyncAt: number | null
  /** Digest of the last set applied in full. */
  appliedDigest: string | null
  /** objectId → digest of each item as last applied (incremental plans skip unchanged items). */
  itemDigests: Record<string, string>
  revoked: boolean
  manifest: Record<string, ManifestEntry>
  conflicts: OrgConflict[]
  /** Paths the host kept as they are: path → the organization's sha256 they chose over. */
  keptLocal: Record<string, string>
  linkedAt: number
}

/** Reads and writes link records of one data dir (in memory for a `:memory:` data dir). */
export class OrgLinkStore {
  readonly #dir: string | null
  readonly #memory = new Map<string, OrgLinkRecord>()

  constructor(
    dataDir: string,
    /** Loads the secret box on first use: a server with no link never evaluates the crypto module. */
    private readonly box: () => Promise<SecretBox>,
  ) {
    this.#dir = dataDir === ':memory:' ? null : join(dataDir, 'org-link')
  }

  #path(workspaceId: string): string {
    return join(this.#dir!, `${encodeURIComponent(workspaceId)}.json`)
  }

  /** The record of a workspace, or null when it is not linked. */
  async load(workspaceId: string): Promise<OrgLinkRecord | null> {
    if (!this.#dir) return structuredClone(this.#memory.get(workspaceId) ?? null)
    try {
      const parsed = JSON.parse(await fsp.readFile(this.#path(workspaceId), 'utf8')) as OrgLinkRecord
      return parsed.workspaceId === workspaceId ? parsed : null
    } catch (error) {
      if (isNotFound(error)) return null
      throw error
    }
  }

  /** Saves a record atomically (0600); `durable` fsyncs (not for feed positions, which are re-read cheaply). */
  async save(record: OrgLinkRecord, durable = true): Promise<void> {
    if (!this.#dir) {
      this.#memory.set(record.workspaceId, structuredClone(record))
      return
    }
    await ensureDir(this.#dir, 0o700)
    await writeFileAtomic(this.#path(record.workspaceId), JSON.stringify(record), { mode: 0o600, durable })
  }

  /** Forgets a link. */
  async remove(workspaceId: string): Promise<void> {
    this.#memory.delete(workspaceId)
    if (this.#dir) await fsp.rm(this.#path(workspaceId), { force: true })
  }

  /** Seals a token for one workspace. */
  async seal(workspaceId: string, token: string): Promise<string> {
    return (await this.box()).seal(token, `org-link:${workspaceId}`)
  }

  /** Opens a sealed token (throws SecretBoxError when it does not open with this key). */
  async open(workspaceId: string, sealed: string): Promise<string> {
    return (await this.box()).open(sealed, `org-link:${workspaceId}`)
  }
}

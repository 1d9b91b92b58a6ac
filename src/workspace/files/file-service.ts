/**
 * The file data plane of all workspaces: sessions, batches with one approval per batch, catalog
 * snapshots and catalog events. Writes take the workspace lock (shared with the config writers
 * and the change watcher), re-check revisions after approval, record catalog events and one audit
 * entry per batch, and let the config watcher see whether a tracked file changed.
 * @module
 */
import { lstat } from 'node:fs/promises'
import { join } from 'node:path'
import type { Logger } from '../../core/logger.ts'
import type { Principal } from '../access/auth.ts'
import type { ProposedChange } from '../approvals/change-description.ts'
import { scopeRank } from '../access/scopes.ts'
import type { WorkspaceRuntime } from '../events/workspace-runtime.ts'
import type { WriteGate } from '../approvals/write-gate.ts'
import { catalogSnapshot, type SnapshotOptions } from './catalog.ts'
import { maskReadSecrets, unmaskWrittenConfig } from './read-secrets.ts'
import { readContainedText } from '../base/workspace-path.ts'
import { seesConfigSecrets } from '../config/config-secret-view.ts'
import { isOpencodeConfigPath } from '../../opencode/mcp-secret-text.ts'
import { CatalogEventLog, revisionOf } from './catalog-events.ts'
import type { ItemError } from './batch-item.ts'
import {
  applyOperation,
  planOperation,
  type OperationRequest,
  type OperationResult,
  type PlannedOperation,
} from './batch-operations.ts'
import { readCheckedItem, readItemSync, readResultsBody } from './batch-reads.ts'
import { applyWrite, planWrites, type WriteOk, type WriteRequest } from './batch-writes.ts'
import { FileContentCache } from './file-content-cache.ts'
import { FileSessionStore, type FileSession } from './file-sessions.ts'
import type { FilesSettings } from '../config/files-settings.ts'
import { workspaceError } from '../workspace-errors.ts'

const listed = (names: string[], max: number) => `${names.slice(0, max).join(', ')}${names.length > max ? ', …' : ''}`

/** The audit entry of a batch: what was done, naming (some of) its paths. */
const auditEntry = (targets: string[], summary: string) => ({
  target: targets.slice(0, 20).join(', '),
  summary: `${summary}: ${listed(targets, 5)}`,
})

/** What the file service takes from the workspace services (the routes pass those whole). */
export interface FileServiceDeps {
  readonly gate: WriteGate
  readonly workspaces: { get(id: string): WorkspaceRuntime }
  readonly now: () => number
}

/** Everything the file routes use. */
export class FileService {
  readonly settings: FilesSettings
  readonly sessions: FileSessionStore
  /** Base64 of unchanged small files, reused across batches (`files.readCacheBytes`). */
  readonly contentCache: FileContentCache
  readonly #s: FileServiceDeps
  readonly #logs = new Map<string, CatalogEventLog>()
  readonly #logger: Logger
  readonly #sweeper: ReturnType<typeof setInterval>

  constructor(services: FileServiceDeps, settings: FilesSettings, logger: Logger) {
    this.#s = services
    this.settings = settings
    this.#logger = logger
    this.sessions = new FileSessionStore(settings, services.now)
    this.contentCache = new FileContentCache(settings.readCacheBytes, services.now)
    this.sessions.onIdle = (workspaceId) => this.#logs.get(workspaceId)?.stopWatching()
    // Expired sessions are dropped on access too; the sweep stops watchers nobody needs any more.
    this.#sweeper = setInterval(() => this.sessions.sweep(), 30_000)
    ;(this.#sweeper as { unref?: () => void }).unref?.()
  }

  /** The catalog event log of a workspace (created on first use). */
  events(ws: WorkspaceRuntime): CatalogEventLog {
    let log = this.#logs.get(ws.entry.id)
    if (!log) {
      log = new CatalogEventLog({
        workspaceId: ws.entry.id,
        root: ws.entry.path,
        retention: this.settings.catalogEventRetention,
        debounceMs: this.settings.watchDebounceMs,
        now: this.#s.now,
        logger: this.#logger,
      })
      this.#logs.set(ws.entry.id, log)
    }
    return log
  }

  /** Opens a session; writable only for a collaborator or owner on a writable server that asked for it. */
  create(ws: WorkspaceRuntime, principal: Principal, input: { ttlSeconds?: number; write?: boolean }): FileSession {
    const canWrite =
      input.write !== false && !this.#s.gate.readOnly && scopeRank(principal.scope) >= scopeRank('collaborator')
    const session = this.sessions.create({
      workspaceId: ws.entry.id,
      tokenHash: principal.tokenHash ?? '',
      canWrite,
      ttlSeconds: input.ttlSeconds,
    })
    // Events are promised from session creation on; the watcher runs while any session is open.
    this.events(ws).startWatching()
    return session
  }

  /**
   * The caller's live session and its workspace. Reached through another workspace's mount
   * (`mountedWorkspaceId`), the session does not exist there: 404 like an unknown id, so a mount
   * reveals nothing about other workspaces' sessions.
   */
  open(
    sessionId: string,
    principal: Principal,
    mountedWorkspaceId?: string,
  ): { session: FileSession; ws: WorkspaceRuntime } {
    const session = this.sessions.get(sessionId, principal.tokenHash)
    if (mountedWorkspaceId !== undefined && session.workspaceId !== mountedWorkspaceId)
      throw workspaceError('file_session_not_found', 'File session not found or expired')
    return { session, ws: this.#s.workspaces.get(session.workspaceId) }
  }

  /** Reads a batch; per-item results, as an encoded JSON body (see `readResultsBody`). */
  /**
   * Reads a batch. With `maskSecrets` (a principal below the owner) MCP secrets read as the mask:
   * `opencode.json(c)` by the config rule, any other file (a copy, a link to it) wherever it holds
   * one of the config's secret values. `revision` stays the file's, so a write-back still applies
   * (and puts the real values back, see `writeBatch`).
   */
  async readBatch(
    ws: WorkspaceRuntime,
    paths: unknown[],
    options: { maskSecrets?: boolean } = {},
  ): Promise<Uint8Array> {
    const items = []
    const parents = new Map<string, string>()
    const root = ws.entry.path
    const max = this.settings.maxFileBytes
    for (const p of paths) {
      // Small files read synchronously; only the rest (large files, other platforms) await.
      const item = readItemSync(root, p, max, parents, this.contentCache)
      items.push(typeof item === 'string' ? await readCheckedItem(root, item, max) : item)
    }
    if (options.maskSecrets) await maskReadSecrets(root, items)
    return readResultsBody(items)
  }

  #writable(session: FileSession): void {
    this.#s.gate.ensureWritable()
    if (!session.canWrite) throw workspaceError('file_session_read_only', 'File session is read-only')
  }

  /**
   * Writes a batch through the write gate: pre-check, one approval for every changing item (its
   * description carries each item's diff), per-item revision re-check, atomic writes.
   */
  async writeBatch(
    session: FileSession,
    ws: WorkspaceRuntime,
    principal: Principal,
    writes: WriteRequest[],
    signal?: AbortSignal,
  ) {
    this.#writable(session)
    const root = ws.entry.path
    // A principal below the owner read the config masked; what it writes back keeps the real secrets.
    const unmask = seesConfigSecrets(principal)
      ? undefined
      : async (rel: string, data: Uint8Array) =>
          isOpencodeConfigPath(rel) ? unmaskWrittenConfig(rel, data, await readContainedText(root, rel)) : data
    const { results, planned } = await planWrites(root, writes, this.settings.maxFileBytes, unmask)
    const changing = planned.filter((w) => !w.unchanged)
    const names = changing.map((w) => w.rel)
    const log = this.events(ws)
    const out: Array<WriteOk | ItemError | null> = [...results]
    let written: string[] = []
    await this.#s.gate.run({
      workspace: ws,
      principal,
      signal,
      action: 'workspace.files.session.write',
      summary: `Write ${names.length} file${names.length === 1 ? '' : 's'}: ${listed(names, 5)}`,
      target: names.slice(0, 20).join(', '),
      paths: names,
      // Items that change no bytes still answer per item, without asking the host about nothing.
      approval: changing.length ? 'required' : 'skip',
      recheck: 'writer',
      perItem: true,
      changes: async () => changing.map((w) => ({ path: w.rel, after: w.data })),
      apply: async () => {
        for (const w of planned) {
          const created: string[] = []
          const result = await applyWrite(root, w, created)
          out[w.index] = result
          for (const dir of created) log.append({ type: 'mkdir', path: dir, source: 'server' })
          if (result.ok && !w.unchanged)
            log.append({ type: 'write', path: w.rel, revision: result.revision, source: 'server' })
        }
      },
      record: async () => {
        written = changing.filter((w) => out[w.index]?.ok).map((w) => w.rel)
        return written.length
          ? auditEntry(written, `Wrote ${written.length} file${written.length === 1 ? '' : 's'}`)
          : null
      },
    })
    if (written.length) await this.#afterWrite(ws)
    return { items: out as Array<WriteOk | ItemError>, cursor: log.cursor }
  }

  /** Runs a batch of operations in order after one approval (through the write gate). */
  async operations(
    session: FileSession,
    ws: WorkspaceRuntime,
    principal: Principal,
    ops: OperationRequest[],
    signal?: AbortSignal,
  ) {
    this.#writable(session)
    const root = ws.entry.path
    const planned = ops.map(planOperation)
    const valid = planned.filter((p): p is PlannedOperation => !('ok' in p))
    const paths = valid.flatMap((p) => (p.type === 'rename' ? [p.from, p.to] : [p.path]))
    const label = valid.map((p) => (p.type === 'rename' ? `rename ${p.from} → ${p.to}` : `${p.type} ${p.path}`))
    const log = this.events(ws)
    const items: OperationResult[] = []
    let done: string[] = []
    await this.#s.gate.run({
      workspace: ws,
      principal,
      signal,
      action: 'workspace.files.session.ops',
      summary: `${label.slice(0, 5).join('; ')}${label.length > 5 ? '; …' : ''}`,
      target: paths.slice(0, 20).join(', '),
      paths,
      approval: valid.length ? 'required' : 'skip',
      recheck: 'writer',
      perItem: true,
      changes: async () =>
        valid.flatMap((p): ProposedChange[] =>
          p.type === 'rename'
            ? [
                { path: p.from, after: null },
                { path: p.to, after: { movedFrom: p.from } },
              ]
            : [{ path: p.path, after: p.type === 'mkdir' ? { directory: true as const } : null }],
        ),
      apply: async () => {
        for (const p of planned) {
          if ('ok' in p) {
            items.push(p)
            continue
          }
          const created: string[] = []
          const result = await applyOperation(root, p, created)
          items.push(result)
          for (const dir of created)
            if (!(p.type === 'mkdir' && dir === p.path)) log.append({ type: 'mkdir', path: dir, source: 'server' })
          if (!result.ok) continue
          if (p.type === 'rename') {
            const st = await lstat(join(root, p.to)).catch(() => null)
            log.append({
              type: 'rename',
              path: p.from,
              toPath: p.to,
              revision: st?.isFile() ? revisionOf(st) : undefined,
              source: 'server',
            })
          } else {
            log.append({ type: p.type, path: p.path, source: 'server' })
          }
        }
      },
      record: async () => {
        done = items.filter((i) => i.ok).map((i) => i.path ?? `${i.from} → ${i.to}`)
        return done.length ? auditEntry(done, `Ran ${done.length} file operation${done.length === 1 ? '' : 's'}`) : null
      },
    })
    if (done.length) await this.#afterWrite(ws)
    return { items, cursor: log.cursor }
  }

  async #afterWrite(ws: WorkspaceRuntime): Promise<void> {
    // A batch may touch config or extension files: their reload events are part of the write (a
    // crash right after the answer must not lose them), so the rescan is awaited. Its failure is
    // logged by the tracker; the files are written either way, and the next start compares again.
    // It takes the workspace lock itself, so it runs after the gate released it.
    await ws.tracker.rescan('server').catch(() => {})
  }

  /** A catalog page with the event cursor taken before the walk (so nothing falls between). */
  async snapshot(ws: WorkspaceRuntime, options: SnapshotOptions) {
    const cursor = this.events(ws).cursor
    const page = await catalogSnapshot(ws.entry.path, options)
    return { cursor, ...page }
  }

  /** Stops every watcher (shutdown). */
  close(): void {
    clearInterval(this.#sweeper)
    this.contentCache.clear()
    for (const log of this.#logs.values()) log.stopWatching()
  }
}

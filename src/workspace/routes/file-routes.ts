/**
 * File sessions (spec §3, reference §1.12): create, renew, close, catalog snapshot and events,
 * read-batch, write-batch and ops. Every path in a body, the `prefix` and the `after` cursor go
 * through the path-safety checks; catalog events stream as SSE or page as `{items, cursor}`.
 * @module
 */
import * as v from 'valibot'
import { PreEncodedJson } from '../../core/errors.ts'
import { requestedPath } from '../../core/requested-path.ts'
import { routeFactory } from '../../core/route.ts'
import { lastEventId, replayThenFollow, sseResponse, wantsEventStream, type StreamRegistry } from '../../core/sse.ts'
import { queryBool, queryInt, queryString } from '../../core/validation.ts'
import { rules, type Principal, type WorkspaceRule } from '../access/auth.ts'
import type { CatalogEvent } from '../files/catalog-events.ts'
import type { FileService } from '../files/file-service.ts'
import { assertNotTemp, normalizeRelPath } from '../base/workspace-path.ts'
import { seesConfigSecrets } from '../config/config-secret-view.ts'
import type { WorkspaceServices } from '../runtime/workspace-services.ts'
import { WorkspaceParams } from './schemas.ts'

const route = routeFactory<WorkspaceRule, Principal>()

/**
 * The workspace of the `/w/:id/...` mount a request came through, if any: a session belongs to one
 * workspace, and a mount scopes everything under it.
 */
function mountOf(request: Request): string | undefined {
  const sent = requestedPath(request)
  const id = sent === undefined ? undefined : /^\/w\/([^/]+)\//.exec(sent)?.[1]
  if (id === undefined) return undefined
  try {
    return decodeURIComponent(id)
  } catch {
    return id
  }
}

const SessionParams = v.object({ sessionId: v.pipe(v.string(), v.minLength(1), v.maxLength(128)) })
const SessionSchema = v.object({
  id: v.string(),
  workspaceId: v.string(),
  createdAt: v.number(),
  expiresAt: v.number(),
  ttlMs: v.number(),
  canWrite: v.boolean(),
})
const TtlBody = v.object({ ttlSeconds: v.optional(v.number()) })
const ItemResult = v.looseObject({
  ok: v.boolean(),
  path: v.optional(v.string()),
  code: v.optional(v.string()),
  message: v.optional(v.string()),
})
const CatalogEventSchema = v.object({
  id: v.string(),
  seq: v.number(),
  workspaceId: v.string(),
  type: v.picklist(['write', 'delete', 'rename', 'mkdir']),
  path: v.string(),
  toPath: v.optional(v.string()),
  revision: v.optional(v.string()),
  source: v.picklist(['server', 'disk']),
  timestamp: v.number(),
})
const PathString = v.pipe(v.string(), v.maxLength(8192))

/** `/workspace/:id/files/sessions` and `/files/sessions/:sessionId/...`. */
export function fileRoutes(s: WorkspaceServices, files: FileService, streams: StreamRegistry) {
  const max = files.settings.maxBatchItems
  const optionalPath = (raw: string | undefined, what: string): string | undefined => {
    if (raw === undefined || raw === '') return undefined
    const rel = normalizeRelPath(raw, what)
    assertNotTemp(rel)
    return rel
  }
  return [
    route({
      method: 'POST',
      path: '/workspace/:id/files/sessions',
      operationId: 'createFileSession',
      summary: 'Open a file session',
      tags: ['files'],
      description:
        'TTL default 15 min, clamped to 30 s-24 h. The session can write only when `write` is not false, the caller is a collaborator or owner and the server is writable. Bound to the calling token.',
      auth: rules.viewer,
      params: WorkspaceParams,
      body: v.object({ ttlSeconds: v.optional(v.number()), write: v.optional(v.boolean()) }),
      responses: { 200: v.object({ session: SessionSchema }) },
      errors: [429],
      handler: ({ params, body, principal }) => {
        const ws = s.workspaces.get(params.id)
        return { session: files.sessions.view(files.create(ws, principal, body)) }
      },
    }),
    route({
      method: 'POST',
      path: '/files/sessions/:sessionId/renew',
      operationId: 'renewFileSession',
      summary: 'Extend a file session',
      tags: ['files'],
      auth: rules.viewer,
      params: SessionParams,
      body: TtlBody,
      responses: { 200: v.object({ session: SessionSchema }) },
      errors: [403],
      handler: ({ request, params, body, principal }) => {
        const { session } = files.open(params.sessionId, principal, mountOf(request))
        return { session: files.sessions.view(files.sessions.renew(session, body.ttlSeconds)) }
      },
    }),
    route({
      method: 'DELETE',
      path: '/files/sessions/:sessionId',
      operationId: 'closeFileSession',
      summary: 'Close a file session',
      tags: ['files'],
      auth: rules.viewer,
      params: SessionParams,
      responses: { 200: v.object({ ok: v.literal(true) }) },
      errors: [403],
      handler: ({ request, params, principal }) => {
        const { session } = files.open(params.sessionId, principal, mountOf(request))
        files.sessions.close(session)
        return { ok: true as const }
      },
    }),
    route({
      method: 'GET',
      path: '/files/sessions/:sessionId/catalog/snapshot',
      operationId: 'fileCatalogSnapshot',
      summary: 'A page of the file catalog',
      tags: ['files'],
      description:
        'Files and directories (`includeDirs=false` leaves directories out) under `prefix`, in component-wise path order, after the exclusive `after`. `truncated` with `nextAfter` when more follow. `cursor` is the catalog event seq taken before the walk: follow `catalog/events?since=cursor` to stay exact. Symlinks and server temp files are not listed.',
      auth: rules.viewer,
      params: SessionParams,
      query: v.object({
        prefix: queryString({ maxLength: 8192 }),
        after: queryString({ maxLength: 8192 }),
        limit: queryInt({
          min: 1,
          max: 10_000,
          default: 2000,
          description: 'Entries per page (1-10000, default 2000)',
        }),
        includeDirs: queryBool(true),
        excludeHeavyDirectories: queryBool(false),
      }),
      responses: {
        200: v.object({
          sessionId: v.string(),
          workspaceId: v.string(),
          generatedAt: v.number(),
          cursor: v.number(),
          truncated: v.boolean(),
          nextAfter: v.optional(v.string()),
          incomplete: v.boolean(),
          skippedDirectories: v.array(v.string()),
          items: v.array(
            v.object({
              path: v.string(),
              kind: v.picklist(['file', 'dir']),
              size: v.number(),
              mtimeMs: v.number(),
              revision: v.string(),
            }),
          ),
        }),
      },
      errors: [400, 403],
      handler: async ({ request, params, query, principal }) => {
        const { session, ws } = files.open(params.sessionId, principal, mountOf(request))
        const prefix = optionalPath(query.prefix, 'prefix') ?? ''
        const after = optionalPath(query.after, 'after')
        const page = await files.snapshot(ws, {
          prefix,
          after,
          limit: query.limit ?? 2000,
          includeDirs: query.includeDirs ?? true,
          excludeHeavyDirectories: query.excludeHeavyDirectories ?? false,
        })
        return { sessionId: session.id, workspaceId: ws.entry.id, generatedAt: s.now(), ...page }
      },
    }),
    route({
      method: 'GET',
      path: '/files/sessions/:sessionId/catalog/events',
      operationId: 'fileCatalogEvents',
      summary: 'File catalog events (JSON page or SSE)',
      tags: ['files'],
      description:
        '`write | delete | rename | mkdir` events, from writes through the server and from changes other programs make on disk. With `Accept: text/event-stream` an SSE stream (`id:` = seq; resume with `Last-Event-ID` or `?since=`); otherwise `{items, cursor, resync}`. `resync: true` means events after `since` were dropped (restart or overflow): take a new snapshot.',
      auth: rules.viewer,
      params: SessionParams,
      query: v.object({
        since: queryInt({
          min: 0,
          max: Number.MAX_SAFE_INTEGER,
          description: 'Return events with seq greater than this',
        }),
        limit: queryInt({
          min: 1,
          max: 10_000,
          default: 1000,
          description: 'Page size for JSON (1-10000, default 1000)',
        }),
      }),
      responses: {
        200: {
          description: 'A page of events, or an SSE stream when requested',
          schema: v.object({ items: v.array(CatalogEventSchema), cursor: v.number(), resync: v.boolean() }),
          events: v.union([
            CatalogEventSchema,
            v.pipe(
              v.object({ resync: v.literal(true), cursor: v.number() }),
              v.description('event `resync`: events were dropped; take a new snapshot'),
            ),
          ]),
        },
      },
      errors: [403],
      handler: ({ request, url, params, query, principal }) => {
        const { ws } = files.open(params.sessionId, principal, mountOf(request))
        const log = files.events(ws)
        if (wantsEventStream(request)) {
          const resume = lastEventId(request, url)
          const after = resume !== null && /^\d+$/.test(resume) ? Number(resume) : (query.since ?? log.cursor)
          return sseResponse({
            registry: streams,
            start: (sink) => {
              if (log.list(after, 1).resync)
                sink.send({ id: log.cursor, event: 'resync', data: { resync: true, cursor: log.cursor } })
              return replayThenFollow<CatalogEvent>({
                sink,
                after,
                backlog: (from) => log.list(from, 1_000_000).items,
                subscribe: (listener) => log.subscribe(listener),
                toEvent: (e) => ({ id: e.seq, event: e.type, data: e }),
              })
            },
          })
        }
        return log.list(query.since ?? 0, query.limit ?? 1000)
      },
    }),
    route({
      method: 'POST',
      path: '/files/sessions/:sessionId/read-batch',
      operationId: 'fileReadBatch',
      summary: 'Read files',
      tags: ['files'],
      description: `Up to ${max} paths; per item \`{ok:true, path, kind, bytes, updatedAt, revision, contentBase64}\` or \`{ok:false, path, code, message}\`. Below the owner scope, MCP header and environment values, OAuth secrets and URL credentials of \`opencode.json(c)\` read as \`********\` (as in \`GET …/config\`), in that file and wherever another file holds one of them; \`revision\` stays the file's, and writing the masked text back keeps the real values.`,
      auth: rules.viewer,
      params: SessionParams,
      body: v.object({ paths: v.pipe(v.array(PathString), v.minLength(1), v.maxLength(max)) }),
      responses: { 200: v.object({ items: v.array(ItemResult) }) },
      errors: [403],
      handler: async ({ request, params, body, principal }) => {
        const { ws } = files.open(params.sessionId, principal, mountOf(request))
        const maskSecrets = !seesConfigSecrets(principal)
        return new PreEncodedJson(await files.readBatch(ws, body.paths, { maskSecrets }))
      },
    }),
    route({
      method: 'POST',
      path: '/files/sessions/:sessionId/write-batch',
      operationId: 'fileWriteBatch',
      summary: 'Write files atomically',
      tags: ['files'],
      description: `Up to ${max} writes, one approval for the batch (action \`workspace.files.session.write\`). \`ifMatchRevision\` guards against lost updates (\`conflict\` with expected and current revision); revisions are checked again after approval. Each file is written to a temp file, fsynced and renamed.`,
      auth: rules.collaborator,
      params: SessionParams,
      body: v.object({
        writes: v.pipe(
          v.array(
            v.object({
              path: PathString,
              contentBase64: v.string(),
              ifMatchRevision: v.optional(v.string()),
              force: v.optional(v.boolean()),
            }),
          ),
          v.minLength(1),
          v.maxLength(max),
        ),
      }),
      responses: { 200: v.object({ items: v.array(ItemResult), cursor: v.number() }) },
      errors: [403, 503],
      handler: ({ request, params, body, principal }) => {
        const { session, ws } = files.open(params.sessionId, principal, mountOf(request))
        return files.writeBatch(session, ws, principal, body.writes, request.signal)
      },
    }),
    route({
      method: 'POST',
      path: '/files/sessions/:sessionId/ops',
      operationId: 'fileOperations',
      summary: 'mkdir, delete and rename',
      tags: ['files'],
      description: `Up to ${max} operations in order, one approval (action \`workspace.files.session.ops\`). Delete removes the entry itself (a symlink, not its target); \`recursive\` is needed for non-empty directories. Rename refuses an existing target.`,
      auth: rules.collaborator,
      params: SessionParams,
      body: v.object({
        operations: v.pipe(
          v.array(
            v.variant('type', [
              v.object({ type: v.literal('mkdir'), path: PathString }),
              v.object({ type: v.literal('delete'), path: PathString, recursive: v.optional(v.boolean()) }),
              v.object({ type: v.literal('rename'), from: PathString, to: PathString }),
            ]),
          ),
          v.minLength(1),
          v.maxLength(max),
        ),
      }),
      responses: {
        200: v.object({ items: v.array(v.looseObject({ ok: v.boolean(), type: v.string() })), cursor: v.number() }),
      },
      errors: [403, 503],
      handler: ({ request, params, body, principal }) => {
        const { session, ws } = files.open(params.sessionId, principal, mountOf(request))
        return files.operations(session, ws, principal, body.operations, request.signal)
      },
    }),
  ]
}

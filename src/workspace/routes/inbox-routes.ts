/**
 * Inbox (uploads into `.opencode/service/inbox/`) and artifacts (downloads from
 * `.opencode/service/outbox/`): list, download by id with `Range` support, and the streamed
 * multipart upload through the write gate (approval-gated unless the host set
 * `inbox.requireApproval: false`).
 * @module
 */
import { stat } from 'node:fs/promises'
import * as v from 'valibot'
import { routeFactory } from '../../core/route.ts'
import { queryString } from '../../core/validation.ts'
import { rules, type Principal, type WorkspaceRule } from '../access/auth.ts'
import { INBOX_DIR, listFolder, openItem, OUTBOX_DIR } from '../artifacts/drop-folder.ts'
import { downloadResponse } from '../artifacts/file-download.ts'
import { revisionOf } from '../files/catalog-events.ts'
import type { FileService } from '../files/file-service.ts'
import { commitUpload, discardUpload, openStaged, receiveUpload } from '../inbox/inbox-upload.ts'
import type { WorkspaceServices } from '../runtime/workspace-services.ts'
import { WorkspaceParams } from './schemas.ts'
import { workspaceError } from '../workspace-errors.ts'

const route = routeFactory<WorkspaceRule, Principal>()

const ItemSchema = v.object({
  id: v.string(),
  path: v.string(),
  name: v.string(),
  size: v.number(),
  updatedAt: v.number(),
})
const Id = v.pipe(v.string(), v.minLength(1), v.maxLength(8192))
const WsId = v.pipe(v.string(), v.minLength(1), v.maxLength(128))
const download = (description: string) => ({
  description,
  contentType: 'application/octet-stream',
  headers: {
    'content-length': 'Bytes in this response',
    'content-disposition': 'attachment with the file name (ASCII and UTF-8 forms)',
    'accept-ranges': 'bytes',
    'content-range': 'On 206: the range served',
  },
})

/** Inbox and artifact routes. */
export function inboxRoutes(s: WorkspaceServices, files: FileService) {
  const { inbox, outbox } = files.settings
  return [
    route({
      method: 'GET',
      path: '/workspace/:id/inbox',
      operationId: 'listInbox',
      summary: 'List inbox files',
      tags: ['inbox'],
      auth: rules.viewer,
      params: WorkspaceParams,
      responses: { 200: v.object({ items: v.array(ItemSchema) }) },
      errors: [404],
      handler: async ({ params }) => {
        const ws = s.workspaces.get(params.id)
        if (!inbox.enabled) throw workspaceError('inbox_disabled', 'The inbox is disabled')
        return { items: await listFolder(ws.entry.path, INBOX_DIR) }
      },
    }),
    route({
      method: 'GET',
      path: '/workspace/:id/inbox/:inboxId',
      operationId: 'downloadInboxItem',
      summary: 'Download an inbox file',
      tags: ['inbox'],
      auth: rules.viewer,
      params: v.object({ id: WsId, inboxId: Id }),
      responses: { 200: download('The file'), 206: download('The requested byte range') },
      errors: [400, 404, 416],
      handler: async ({ request, params }) => {
        const ws = s.workspaces.get(params.id)
        if (!inbox.enabled) throw workspaceError('inbox_disabled', 'The inbox is disabled')
        const item = await openItem(ws.entry.path, INBOX_DIR, params.inboxId, {
          invalid: 'invalid_inbox_item',
          missing: 'inbox_item_not_found',
        })
        return downloadResponse(item.handle, item.size, item.name, request.headers.get('range'))
      },
    }),
    route({
      method: 'POST',
      path: '/workspace/:id/inbox',
      operationId: 'uploadInboxFile',
      summary: 'Upload a file into the inbox (multipart)',
      tags: ['inbox'],
      description: `Form field \`file\` (required) is streamed to disk; the target is \`?path=\`, else the form field \`path\`, else the file name, inside \`${INBOX_DIR}/\`. Larger than \`inbox.maxBytes\` (${inbox.maxBytes}) → 413 \`file_too_large\` \`{maxBytes, size}\`. Approval-gated (action \`workspace.inbox.upload\`) unless the host set \`inbox.requireApproval: false\`.`,
      auth: rules.collaborator,
      params: WorkspaceParams,
      query: v.object({ path: queryString({ maxLength: 8192 }) }),
      body: {
        raw: true,
        contentType: 'multipart/form-data',
        description: 'Fields: `file` (binary, required), `path` (optional target path inside the inbox)',
        required: true,
      },
      responses: { 200: v.object({ ok: v.literal(true), path: v.string(), bytes: v.number() }) },
      errors: [400, 403, 404, 409, 413, 503],
      handler: async ({ request, params, query, principal }) => {
        const ws = s.workspaces.get(params.id)
        if (!inbox.enabled) throw workspaceError('inbox_disabled', 'The inbox is disabled')
        s.gate.ensureWritable()
        const upload = await receiveUpload(ws.entry.path, request, query.path, inbox.maxBytes)
        let staged: Awaited<ReturnType<typeof openStaged>> | undefined
        try {
          const bytes = await openStaged(ws.entry.path, upload)
          staged = bytes
          await s.gate.run({
            workspace: ws,
            principal,
            signal: request.signal,
            action: 'workspace.inbox.upload',
            summary: `Upload ${upload.rel} (${upload.bytes} bytes) to the inbox`,
            target: upload.workspaceRel,
            paths: [upload.workspaceRel],
            approval: inbox.requireApproval ? 'required' : 'skip',
            // An upload replaces whatever is there when it lands, as the reference's does.
            recheck: 'writer',
            changes: async () => [{ path: upload.workspaceRel, after: { staged: bytes } }],
            apply: () => commitUpload(ws.entry.path, upload),
            record: async () => {
              const st = await stat(`${ws.entry.path}/${upload.workspaceRel}`).catch(() => null)
              files.events(ws).append({
                type: 'write',
                path: upload.workspaceRel,
                revision: st ? revisionOf(st) : undefined,
                source: 'server',
              })
              return { target: upload.workspaceRel, summary: `Uploaded ${upload.rel} (${upload.bytes} bytes)` }
            },
          })
        } catch (error) {
          await discardUpload(ws.entry.path, upload)
          throw error
        } finally {
          await staged?.close()
        }
        return { ok: true as const, path: upload.rel, bytes: upload.bytes }
      },
    }),
    route({
      method: 'GET',
      path: '/workspace/:id/artifacts',
      operationId: 'listArtifacts',
      summary: 'List artifacts',
      tags: ['artifacts'],
      description: `Regular files under \`${OUTBOX_DIR}/\`, newest first. \`{items:[]}\` when the outbox is disabled.`,
      auth: rules.viewer,
      params: WorkspaceParams,
      responses: { 200: v.object({ items: v.array(ItemSchema) }) },
      handler: async ({ params }) => {
        const ws = s.workspaces.get(params.id)
        return { items: outbox.enabled ? await listFolder(ws.entry.path, OUTBOX_DIR) : [] }
      },
    }),
    route({
      method: 'GET',
      path: '/workspace/:id/artifacts/:artifactId',
      operationId: 'downloadArtifact',
      summary: 'Download an artifact',
      tags: ['artifacts'],
      description:
        'Streams the file with `Content-Length` and `Content-Disposition`; a single `Range: bytes=…` answers 206 (416 when unsatisfiable).',
      auth: rules.viewer,
      params: v.object({ id: WsId, artifactId: Id }),
      responses: { 200: download('The file'), 206: download('The requested byte range') },
      errors: [400, 404, 416],
      handler: async ({ request, params }) => {
        const ws = s.workspaces.get(params.id)
        if (!outbox.enabled) throw workspaceError('outbox_disabled', 'The outbox is disabled')
        const item = await openItem(ws.entry.path, OUTBOX_DIR, params.artifactId, {
          invalid: 'invalid_artifact',
          missing: 'artifact_not_found',
        })
        return downloadResponse(item.handle, item.size, item.name, request.headers.get('range'))
      },
    }),
  ]
}

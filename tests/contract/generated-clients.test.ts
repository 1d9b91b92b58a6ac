/**
 * What a client generated from either OpenAPI document relies on (docs/clients.md): error
 * responses carry the ErrorBody, feeds declare their event stream, cursors round-trip as numbers,
 * and 413 is declared where the server reads a bounded body.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { buildOpenApiDocuments } from '../../src/openapi-documents.ts'
import { assert, suite } from '../harness.ts'

const test = suite('contract/generated clients')

type Operation = {
  responses: Record<string, { content?: Record<string, { schema?: Record<string, unknown> }> }>
  parameters?: Array<{ name: string; in: string; schema: Record<string, unknown> }>
  requestBody?: { content: Record<string, unknown> }
}
type Doc = {
  paths: Record<string, Record<string, Operation>>
  components: { schemas: Record<string, { properties: Record<string, Record<string, unknown>> }> }
}

const dir = mkdtempSync(join(tmpdir(), 'svc-generated-clients-'))
const documents = (await buildOpenApiDocuments(dir)) as unknown as Record<string, Doc>
rmSync(dir, { recursive: true, force: true })

function operations(doc: Doc): Array<[string, string, Operation]> {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item).map(([method, op]) => [path, method, op] as [string, string, Operation]),
  )
}

test('every error response has a body schema, so generated error types are never unknown', () => {
  for (const [file, doc] of Object.entries(documents)) {
    for (const [path, method, op] of operations(doc)) {
      for (const [status, response] of Object.entries(op.responses)) {
        if (Number(status) < 400) continue
        const media = Object.values(response.content ?? {})
        assert.ok(media.length > 0 && media.every((m) => m.schema), `${file} ${method} ${path} ${status} has a body`)
        if (status === '431')
          assert.is(
            Object.keys(op.responses).filter((s) => s.startsWith('4')).length,
            1,
            `${path}: 431 only when no other 4xx`,
          )
      }
    }
    const details = doc.components.schemas.ErrorBody!.properties.details as { properties?: Record<string, unknown> }
    assert.ok(details.properties?.issues, `${file}: ErrorBody.details documents issues`)
  }
})

test("the feeds declare text/event-stream beside their JSON page, and a page's cursor is the type its query takes", () => {
  const cp = documents['control-plane.openapi.json']!
  const ws = documents['workspace.openapi.json']!
  const feeds: Array<[Doc, string, string, string]> = [
    [cp, '/v1/events', 'after', 'next'],
    [ws, '/workspace/{id}/events', 'since', 'cursor'],
    [ws, '/files/sessions/{sessionId}/catalog/events', 'since', 'cursor'],
  ]
  for (const [doc, path, query, cursor] of feeds) {
    const op = doc.paths[path]!.get!
    const content = op.responses['200']!.content!
    assert.equal(Object.keys(content), ['application/json', 'text/event-stream'], path)
    assert.ok(content['text/event-stream']!.schema!.properties || content['text/event-stream']!.schema!.anyOf)
    const page = content['application/json']!.schema!.properties as Record<string, { type: string }>
    const param = op.parameters!.find((p) => p.name === query)!
    assert.is(page[cursor]!.type, 'number', `${path} ${cursor}`)
    assert.is(param.schema.type, 'integer', `${path} ?${query}`)
  }
  const approvals = ws.paths['/approvals/events']!.get!.responses['200']!.content!
  assert.equal(Object.keys(approvals), ['text/event-stream'])
  assert.ok(approvals['text/event-stream']!.schema!.properties)
})

test('every operation with a JSON body declares 413', () => {
  for (const [file, doc] of Object.entries(documents)) {
    for (const [path, method, op] of operations(doc)) {
      if (op.requestBody?.content['application/json'])
        assert.ok(op.responses['413'], `${file} ${method} ${path} declares 413`)
    }
  }
  const pinned = documents['workspace.openapi.json']!.paths['/sidecar/experimental/control-plane/move-session']!.post!
  assert.ok(pinned.responses['413'], 'a sidecar row that reads its pinned body declares 413')
})

test.run()

import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { createControlPlaneApp, type ControlPlaneApp } from '../../src/control-plane/app.ts'
import { loadControlPlaneConfig } from '../../src/control-plane/config.ts'
import { silentLogger } from '../../src/core/logger.ts'
import type { Surface } from '../../src/core/surface.ts'
import { createWorkspaceApp, type WorkspaceSurface } from '../../src/workspace/app.ts'
import { loadWorkspaceConfig } from '../../src/workspace/config/server-config.ts'
import { assert, request, suite, tempDir } from '../harness.ts'
import { dispatchDrift } from '../dispatch-check.ts'
import { openApiErrors, operationDrift } from '../openapi-check.ts'

const contract = suite('contract/openapi', { timeoutMs: 60_000 })
const dir = tempDir('svc-contract-')
const surfaces: Record<string, Surface> = {}

contract.before(async () => {
  mkdirSync(join(dir.path, 'ws'))
  writeFileSync(join(dir.path, 'server.json'), '{}')
  const env = { HOME: dir.path }
  surfaces.workspace = await createWorkspaceApp(
    loadWorkspaceConfig(
      { config: join(dir.path, 'server.json'), workspace: [join(dir.path, 'ws')], 'data-dir': join(dir.path, 'data') },
      env,
      dir.path,
    ),
    { logger: silentLogger },
  )
  surfaces['control-plane'] = await createControlPlaneApp(
    loadControlPlaneConfig({ 'data-dir': join(dir.path, 'cp') }, env, dir.path),
    { logger: silentLogger },
  )
})

contract.after(async () => {
  for (const surface of Object.values(surfaces)) await surface.close()
  dir.remove()
})

for (const mode of ['workspace', 'control-plane']) {
  contract(`the ${mode} document served at /openapi.json is valid OpenAPI 3.1`, async () => {
    const res = await request(surfaces[mode]!.fetch, '/openapi.json')
    assert.is(res.status, 200)
    const doc = await res.json()
    assert.is(doc.openapi, '3.1.0')
    const errors = await openApiErrors(doc)
    assert.equal(errors, [], JSON.stringify(errors).slice(0, 2000))
  })

  contract(`every ${mode} route the router registers is documented, and every documented route is registered`, () => {
    const surface = surfaces[mode]!
    const drift = operationDrift(surface.router, surface.openapi())
    assert.equal(drift, { undocumented: [], unregistered: [] })
    assert.ok(surface.router.routes.length >= 2)
  })

  contract(`the ${mode} dispatch picks the route itty-router's first match would, on every sampled path`, async () => {
    const routes =
      mode === 'workspace'
        ? (surfaces.workspace as WorkspaceSurface).routes
        : (surfaces['control-plane'] as ControlPlaneApp).contract.routes
    const drift = await dispatchDrift(routes as never)
    assert.equal(drift.slice(0, 20), [], `${drift.length} disagreements`)
  })

  contract(`every ${mode} operation has a unique operationId, a security list and an error response`, () => {
    const doc = surfaces[mode]!.openapi() as {
      paths: Record<
        string,
        Record<string, { operationId: string; security: unknown[]; responses: Record<string, unknown> }>
      >
    }
    const ids = new Set<string>()
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        assert.ok(op.operationId, `${method} ${path} has an operationId`)
        assert.not.ok(ids.has(op.operationId), `operationId ${op.operationId} is unique`)
        ids.add(op.operationId)
        assert.ok(Array.isArray(op.security), `${method} ${path} declares security`)
        assert.ok(op.responses['500'], `${method} ${path} documents 500`)
        assert.ok(
          Object.keys(op.responses).some((status) => status.startsWith('4')),
          `${method} ${path} documents a 4xx`,
        )
      }
    }
  })

  contract(`the ${mode} document names its server relative to where it was fetched, and a licence`, async () => {
    const doc = await (await request(surfaces[mode]!.fetch, '/openapi.json')).json()
    assert.equal(
      doc.servers.map((s: { url: string }) => s.url),
      ['/'],
    )
    assert.ok(doc.info.license?.name, 'info.license.name')
    assert.ok(doc.info.license.identifier || doc.info.license.url, 'an SPDX identifier or a URL')
  })
}

contract('/health answers on both surfaces without credentials', async () => {
  for (const mode of ['workspace', 'control-plane']) {
    const res = await request(surfaces[mode]!.fetch, '/health')
    assert.is(res.status, 200)
    const body = await res.json()
    assert.is(body.ok, true)
    assert.is(body.mode, mode)
    assert.type(body.uptimeMs, 'number')
    assert.match(body.version, /^\d+\.\d+\.\d+/)
  }
})

contract(
  '/ready answers on both surfaces without credentials, is in both documents and says what it checked',
  async () => {
    for (const mode of ['workspace', 'control-plane']) {
      const res = await request(surfaces[mode]!.fetch, '/ready')
      assert.is(res.status, 200)
      const body = await res.json()
      assert.is(body.ready, true)
      assert.equal(body.failed, [])
      assert.equal(body.checks, mode === 'control-plane' ? { database: 'ok', migrations: 'ok' } : {})
      const doc = await (await request(surfaces[mode]!.fetch, '/openapi.json')).json()
      assert.ok(['200', '503'].every((status) => status in doc.paths['/ready'].get.responses))
      assert.equal(doc.paths['/ready'].get.security, [])
    }
  },
)

contract('the dispatch check catches a table whose order the fast path does not honour', async () => {
  const stub = (path: string) => ({
    method: 'GET',
    path,
    operationId: path,
    summary: 's',
    auth: 'public',
    responses: { 200: { description: 'd' } },
    handler: () => ({}),
  })
  // Registered first, the broader pattern wins /a/q/c in itty; the literal-segment bucket of the
  // later /a/:x/c is tried first by the fast path.
  const drift = await dispatchDrift([stub('/a/:x/:y'), stub('/a/:x/c')] as never)
  assert.ok(drift.includes('GET /a/x/c: itty GET /a/:x/:y → ours GET /a/:x/c'), drift.join('\n'))
  // What the fast path does honour: a literal path behind an earlier pattern, a greedy middle part.
  assert.equal(
    await dispatchDrift([stub('/items/:id'), stub('/items/new'), stub('/files/*/meta'), stub('/files/:name')] as never),
    [],
  )
})

contract('the checks catch an invalid document and a route missing from it', async () => {
  const errors = await openApiErrors({
    openapi: '3.1.0',
    info: { title: 'x' },
    paths: { '/a': { get: { responses: 'nope' } } },
  })
  assert.ok(errors.length > 0)
  const surface = surfaces.workspace!
  const doc = structuredClone(surface.openapi()) as { paths: Record<string, unknown> }
  delete doc.paths['/health']
  doc.paths['/ghost'] = { get: { responses: {} } }
  const drift = operationDrift(surface.router, doc)
  assert.equal(drift, { undocumented: ['GET /health'], unregistered: ['GET /ghost'] })
})

contract.run()

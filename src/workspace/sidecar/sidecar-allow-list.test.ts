/**
 * The allow-list against the fake upstream: unlisted routes are host-only, rows enforce their role,
 * governed writes are approved or audited, bodies and file paths are pinned, and the OpenAPI
 * document and docs table are generated from the same rows.
 */
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { assert, suite } from '../../../tests/harness.ts'
import { documentedOperations } from '../../../tests/openapi-check.ts'
import { openApiPath } from '../../core/openapi.ts'
import {
  KIT_HOST_TOKEN,
  type ProxyFixture,
  startProxyFixture,
  startSidecarApp,
  eventually,
} from '../testing/sidecar-test-kit.ts'
import { classifySidecarRequest } from './route-policy.ts'
import { SIDECAR_ROUTES } from './route-table.ts'
import { DOC_PATH, renderAllowList } from './route-table-doc.ts'
import { SocketTickets, TICKET_TTL_MS } from './socket-tickets.ts'

const ctx: { fx: ProxyFixture; outside: string } = {} as never
const list = suite<typeof ctx>('workspace/sidecar allow-list (fake upstream)', { timeoutMs: 20_000 })

list.before(async () => {
  ctx.fx = await startProxyFixture()
  ctx.outside = join(ctx.fx.kit.dir, 'outside')
  mkdirSync(ctx.outside)
  writeFileSync(join(ctx.outside, 'secret.txt'), 'outside secret')
  const root = ctx.fx.kit.roots[0]!
  symlinkSync(ctx.outside, join(root, 'linked-dir'))
  symlinkSync(join(ctx.outside, 'secret.txt'), join(root, 'linked-file.txt'))
  writeFileSync(join(root, 'inside.txt'), 'inside')
})

list.after(async () => {
  await ctx.fx?.close()
})

const reached = (path: string) => ctx.fx.fake.requests.filter((r) => r.path === path).length

list(
  'a route that is not on the allow-list is 403 sidecar_route_not_allowed for viewers and collaborators',
  async () => {
    const before = reached('/echo')
    for (const as of ['viewer', 'collaborator'] as const) {
      for (const path of ['/sidecar/echo', `/w/${ctx.fx.kit.wsIds[1]}/sidecar/echo`]) {
        const res = await ctx.fx.kit.req(path, { as, method: 'POST', json: {} })
        assert.is(res.status, 403, `${as} ${path}`)
        const body = await res.json()
        assert.is(body.code, 'sidecar_route_not_allowed')
        assert.equal(body.details, { method: 'POST', path: '/echo', required: 'owner', scope: as })
      }
    }
    assert.is(reached('/echo'), before, 'a refused request reached the sidecar')
  },
)

list('the host reaches unlisted routes with an owner token or the host token, and its writes are audited', async () => {
  const owner = await ctx.fx.kit.req('/sidecar/echo', { as: 'owner', method: 'POST', json: { a: 1 } })
  assert.is(owner.status, 200)
  const host = await ctx.fx.kit.req('/sidecar/echo', {
    as: 'none',
    headers: { 'x-service-host-token': KIT_HOST_TOKEN },
  })
  assert.is(host.status, 200)
  const audit = await ctx.fx.kit.app.services.audit.list(ctx.fx.kit.wsIds[0]!, 5)
  assert.ok(
    audit.some((e) => e.action === 'sidecar.unlisted' && e.summary.startsWith('POST /echo')),
    JSON.stringify(audit),
  )
})

list('each row enforces its role: viewer, collaborator and owner rows refuse the scope below them', async () => {
  const before = ctx.fx.fake.requests.length
  const viewerPost = await ctx.fx.kit.req('/sidecar/session', { as: 'viewer', method: 'POST', json: {} })
  assert.is(viewerPost.status, 403)
  assert.equal((await viewerPost.json()).details, { required: 'collaborator', scope: 'viewer' })
  const auth = await ctx.fx.kit.req('/sidecar/auth/anthropic', { method: 'PUT', json: { type: 'api', key: 'k' } })
  assert.is(auth.status, 403, 'provider credentials are owner-only')
  const globalConfig = await ctx.fx.kit.req('/sidecar/global/config')
  assert.is(globalConfig.status, 403, 'machine-wide config may hold keys: owner-only even to read')
  assert.is(ctx.fx.fake.requests.length, before, 'a refused request reached the sidecar')
  const ownerAuth = await ctx.fx.kit.req('/sidecar/auth/anthropic', {
    as: 'owner',
    method: 'PUT',
    json: { type: 'api', key: 'k' },
  })
  assert.is(ownerAuth.status, 404, 'forwarded; the fake has no such route')
  const audit = await ctx.fx.kit.app.services.audit.list(ctx.fx.kit.wsIds[0]!, 5)
  assert.ok(audit.some((e) => e.action === 'sidecar.auth.set' && e.actor.scope === 'owner'))
})

list(
  'config changes through the proxy wait for the host approval, and a denial never reaches the sidecar',
  async () => {
    const manual = await startSidecarApp({
      workspaces: [{ sidecar: { baseUrl: ctx.fx.fake.url, password: 'fake-sidecar-password-1' } }],
      file: { approval: { mode: 'manual', timeoutMs: 5000 } },
    })
    try {
      const before = reached('/config')
      const pending = manual.req('/sidecar/config', { method: 'PATCH', json: { theme: 'x' } })
      await eventually(() => manual.app.services.approvals.list().length === 1, 'an approval request')
      const [request] = manual.app.services.approvals.list()
      assert.is(request!.action, 'sidecar.config.update')
      await manual.app.services.approvals.decide(request!.id, 'deny', { type: 'host', scope: 'owner' })
      const res = await pending
      assert.equal([res.status, (await res.json()).code], [403, 'write_denied'])
      assert.is(reached('/config'), before)
      const allowed = manual.req('/sidecar/config', { method: 'PATCH', json: { theme: 'y' } })
      await eventually(() => manual.app.services.approvals.list().length === 1, 'a second approval request')
      await manual.app.services.approvals.decide(manual.app.services.approvals.list()[0]!.id, 'allow', {
        type: 'host',
        scope: 'owner',
      })
      assert.is((await allowed).status, 404, 'forwarded after approval; the fake has no /config')
      assert.is(reached('/config'), before + 1)
    } finally {
      await manual.dispose()
    }
  },
)

list('a V2 session is created in the workspace whatever location the body names', async () => {
  await ctx.fx.kit.req('/sidecar/api/session', {
    method: 'POST',
    json: { title: 't', location: { directory: '/etc', workspaceID: 'wrk_other' } },
  })
  const seen = [...ctx.fx.fake.requests].reverse().find((r) => r.path === '/api/session')!
  assert.equal(JSON.parse(seen.body!), { title: 't', location: { directory: ctx.fx.kit.roots[0] } })
  await ctx.fx.kit.req('/sidecar/api/session', { method: 'POST', json: { title: 'no location' } })
  const second = [...ctx.fx.fake.requests].reverse().find((r) => r.path === '/api/session')!
  assert.equal(JSON.parse(second.body!).location, { directory: ctx.fx.kit.roots[0] })
})

list('a session id of another workspace inside a body is 404 and is not forwarded', async () => {
  const before = ctx.fx.fake.requests.filter((r) => r.method === 'POST').length
  for (const [path, json] of [
    ['/sidecar/session', { parentID: 'ses_foreign' }],
    ['/sidecar/tui/select-session', { sessionID: 'ses_foreign' }],
  ] as const) {
    const res = await ctx.fx.kit.req(path, { method: 'POST', json })
    assert.equal([res.status, (await res.json()).code], [404, 'session_not_found'], path)
  }
  assert.is(ctx.fx.fake.requests.filter((r) => r.method === 'POST').length, before)
  const own = await ctx.fx.kit.req('/sidecar/tui/select-session', { method: 'POST', json: { sessionID: 'ses_own' } })
  assert.is(own.status, 404, 'forwarded; the fake has no tui route')
  assert.is(
    JSON.parse([...ctx.fx.fake.requests].reverse().find((r) => r.path === '/tui/select-session')!.body!).sessionID,
    'ses_own',
  )
})

list('file routes refuse paths that leave the workspace, through symlinks planted inside or ..', async () => {
  const before = ctx.fx.fake.requests.length
  for (const path of [
    '/sidecar/file/content?path=linked-dir/secret.txt',
    '/sidecar/file/content?path=linked-file.txt',
    '/sidecar/file/content?path=../outside/secret.txt',
    `/sidecar/file/content?path=${encodeURIComponent(join(ctx.outside, 'secret.txt'))}`,
    '/sidecar/file?path=linked-dir',
    '/sidecar/api/fs/read/linked-dir/secret.txt',
    '/sidecar/api/fs/read/linked-file.txt',
    '/sidecar/api/fs/list?path=linked-dir',
  ]) {
    const res = await ctx.fx.kit.req(path, { as: 'viewer' })
    assert.equal([res.status, (await res.json()).code], [400, 'invalid_path'], path)
  }
  assert.is(ctx.fx.fake.requests.length, before, 'a refused file request reached the sidecar')
  const inside = await ctx.fx.kit.req('/sidecar/file/content?path=inside.txt', { as: 'viewer' })
  assert.is(inside.status, 404, 'forwarded; the fake has no file route')
  const pty = await ctx.fx.kit.req('/sidecar/pty', { method: 'POST', json: { cwd: 'linked-dir' } })
  assert.equal([pty.status, (await pty.json()).code], [400, 'invalid_path'])
})

list('rows are classified case-insensitively and no row is shadowed by an earlier one', () => {
  assert.is(classifySidecarRequest('GET', '/Session/ses_1/Message')?.entry.operationId, 'session.messages')
  assert.is(classifySidecarRequest('GET', '/session/status')?.entry.operationId, 'session.status')
  assert.is(classifySidecarRequest('GET', '/api/fs/read/a/b.txt')?.params.filePath, 'a/b.txt')
  assert.is(classifySidecarRequest('POST', '/nope'), null)
  for (const entry of SIDECAR_ROUTES) {
    const sample = entry.path.replace(/:\w+\+?/g, 'x1')
    assert.is(classifySidecarRequest(entry.method, sample)?.entry, entry, `${entry.method} ${entry.path}`)
  }
})

list('the OpenAPI document declares every row on both mounts with the role the proxy enforces', () => {
  const doc = ctx.fx.kit.app.openapi() as {
    paths: Record<string, Record<string, { security: unknown[]; responses: Record<string, any> }>>
  }
  const expected = {
    viewer: [{ bearerToken: ['viewer'] }],
    collaborator: [{ bearerToken: ['collaborator'] }],
    owner: [{ hostToken: [] }, { bearerToken: ['owner'] }],
  }
  for (const entry of SIDECAR_ROUTES) {
    const openapiPath = entry.path.replace(/:(\w+)\+?/g, '{$1}')
    for (const prefix of ['/sidecar', '/w/{id}/sidecar']) {
      const op = doc.paths[prefix + openapiPath]?.[entry.method.toLowerCase()]
      assert.ok(op, `${entry.method} ${prefix}${openapiPath} is documented`)
      if (entry.kind === 'websocket') {
        assert.ok(op!.responses['101'], 'upgrades are declared as 101')
        assert.equal(op!.security, [{ bearerToken: ['collaborator'] }, { sidecarTicket: [] }])
        continue
      }
      assert.equal(op!.security, expected[entry.role], `${entry.method} ${entry.path}`)
      const media = Object.keys(op!.responses['200'].content)
      assert.equal(media, [entry.kind === 'sse' ? 'text/event-stream' : '*/*'])
    }
  }
  const fallback = doc.paths['/sidecar/{path}']!.post!
  assert.equal(fallback.security, expected.owner)
})

list('the router holds one sidecar route per method and mount, and the document lists the rows behind them', () => {
  const app = ctx.fx.kit.app
  const mounts = ['/sidecar', '/w/{id}/sidecar']
  const underMounts = (ops: string[]) => ops.filter((op) => mounts.some((m) => op.split(' ')[1]!.startsWith(`${m}/`)))
  const registered = underMounts(app.router.routes.map(({ method, path }) => `${method} ${openApiPath(path)}`))
  const fallbacks = mounts.flatMap((m) => ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].map((x) => `${x} ${m}/{path}`))
  assert.equal(registered.sort(), [...fallbacks].sort())
  const documented = underMounts(documentedOperations(app.openapi()))
  const rows = mounts.flatMap((m) => SIDECAR_ROUTES.map((entry) => `${entry.method} ${m}${openApiPath(entry.path)}`))
  assert.equal(documented.sort(), [...rows, ...fallbacks].sort())
})

list(
  'a row reached in another letter case is host-only, as the fallback is, and gets its row for the host',
  async () => {
    const before = reached('/global/health')
    const viewer = await ctx.fx.kit.req('/sidecar/Global/health', { as: 'viewer' })
    assert.equal([viewer.status, (await viewer.json()).code], [403, 'sidecar_route_not_allowed'])
    assert.is(reached('/global/health'), before, 'refused before the sidecar')
    assert.is((await ctx.fx.kit.req('/sidecar/global/health', { as: 'viewer' })).status, 200)
    const owner = await ctx.fx.kit.req('/sidecar/Global/health', { as: 'owner' })
    await owner.body?.cancel()
    assert.is(reached('/Global/health') + reached('/global/health'), before + 2, 'forwarded for the host')
  },
)

list(
  'every row, called as viewer, collaborator and owner, is forwarded exactly when the table allows the role',
  async () => {
    const rank = { viewer: 1, collaborator: 2, owner: 3 } as const
    const mismatches: string[] = []
    for (const entry of SIDECAR_ROUTES) {
      const path = `/sidecar${entry.path.replace(/:\w+\+?/g, 'x1')}`
      for (const as of ['viewer', 'collaborator', 'owner'] as const) {
        const before = ctx.fx.fake.requests.length
        const hasBody = entry.method !== 'GET' && entry.method !== 'DELETE'
        const res = await ctx.fx.kit.req(path, { as, method: entry.method, ...(hasBody ? { json: {} } : {}) })
        // Event streams stay open: only their status matters here.
        let body = ''
        if (entry.kind === 'sse') await res.body?.cancel()
        else body = await res.text()
        const allowed = rank[as] >= rank[entry.role]
        const forwarded = ctx.fx.fake.requests.length > before
        // A WebSocket row in-process has no listener to upgrade: 426 means it passed every check.
        const passed = forwarded || (entry.kind === 'websocket' && res.status === 426)
        if (allowed !== passed)
          mismatches.push(`${as} ${entry.method} ${entry.path}: ${res.status} ${body.slice(0, 80)}`)
        if (!allowed && res.status !== 403)
          mismatches.push(`${as} ${entry.method} ${entry.path}: refused with ${res.status}`)
      }
    }
    assert.equal(mismatches, [])
  },
)

list('a WebSocket ticket opens one path of one workspace once, and expires', () => {
  let now = 1000
  const tickets = new SocketTickets(() => now)
  const principal = { type: 'remote' as const, scope: 'collaborator' as const, tokenHash: 'h' }
  const { ticket } = tickets.issue({ workspaceId: 'a', path: '/pty/pty_1/connect', principal })
  assert.is(tickets.consume(ticket, 'b', '/pty/pty_1/connect'), null, 'another workspace')
  assert.is(tickets.consume(ticket, 'a', '/pty/pty_1/connect'), null, 'burnt by the wrong use')
  const second = tickets.issue({ workspaceId: 'a', path: '/pty/pty_1/connect', principal }).ticket
  assert.equal(tickets.consume(second, 'a', '/PTY/pty_1/connect'), principal)
  assert.is(tickets.consume(second, 'a', '/pty/pty_1/connect'), null, 'single use')
  const third = tickets.issue({ workspaceId: 'a', path: '/pty/pty_1/connect', principal }).ticket
  now += TICKET_TTL_MS
  assert.is(tickets.consume(third, 'a', '/pty/pty_1/connect'), null, 'expired')
})

list('the table in docs/sidecar-proxy.md is the one generated from the allow-list', () => {
  const text = readFileSync(DOC_PATH, 'utf8')
  assert.ok(text.includes(renderAllowList()), 'run: bun src/workspace/sidecar/route-table-doc.ts --write')
})

list.run()

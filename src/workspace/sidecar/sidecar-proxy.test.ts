import { assert, suite } from '../../../tests/harness.ts'
import {
  eventually,
  FIXTURE_PASSWORD as PASSWORD,
  startProxyFixture,
  startSidecarApp,
  type ProxyFixture,
} from '../testing/sidecar-test-kit.ts'

const BASIC = `Basic ${btoa(`opencode:${PASSWORD}`)}`

const ctx = {} as ProxyFixture
const proxy = suite('workspace/sidecar proxy (fake upstream)', { timeoutMs: 20_000 })

proxy.before(async () => {
  Object.assign(ctx, await startProxyFixture())
})
proxy.after(async () => {
  await ctx.close?.()
})

const last = (path: string) => [...ctx.fake.requests].reverse().find((r) => r.path === path)!

proxy('the client credentials are stripped and the sidecar Basic credentials injected on both mounts', async () => {
  for (const [path, root] of [
    ['/sidecar/echo', ctx.kit.roots[0]],
    [`/w/${ctx.kit.wsIds[1]}/sidecar/echo`, ctx.kit.roots[1]],
  ] as const) {
    const res = await ctx.kit.req(path, {
      as: 'owner',
      headers: {
        cookie: 'sid=client',
        'x-service-host-token': 'host-secret',
        'x-service-client-id': 'c1',
        'proxy-authorization': 'Basic eA==',
      },
    })
    assert.is(res.status, 200, path)
    const seen = last('/echo').headers
    assert.is(seen.authorization, BASIC)
    for (const name of ['cookie', 'x-service-host-token', 'x-service-client-id', 'proxy-authorization', 'origin'])
      assert.is(seen[name], undefined, name)
    assert.not.ok(JSON.stringify(seen).includes(ctx.kit.tokens.owner), 'client bearer token reached the sidecar')
    assert.is(seen['x-opencode-directory'], root)
  }
})

proxy('every client directory value is replaced by the pinned directory and other params are kept', async () => {
  const spoof =
    '?directory=/etc&directory=%2Fetc%2Fpasswd&Directory=../../..&directory%5B%5D=/root&workspace=ws_other&foo=bar&foo=baz'
  const res = await ctx.kit.req(`/sidecar/echo${spoof}`, { as: 'owner', headers: { 'x-opencode-directory': '/etc' } })
  assert.is(res.status, 200)
  const seen = last('/echo')
  const dirs = seen.query.filter(([k]) => k.toLowerCase().startsWith('directory'))
  assert.equal(dirs, [['directory', ctx.kit.roots[0]]])
  assert.equal(
    seen.query.filter(([k]) => k === 'foo').map(([, v]) => v),
    ['bar', 'baz'],
  )
  assert.not.ok(seen.query.some(([k]) => k === 'workspace'))
  assert.is(seen.headers['x-opencode-directory'], ctx.kit.roots[0])
})

proxy('a non-ASCII directory is percent-encoded in the header and raw in the query', async () => {
  const res = await ctx.kit.req(`/w/${ctx.kit.wsIds[2]}/sidecar/echo`, { as: 'owner' })
  assert.is(res.status, 200)
  const seen = last('/echo')
  assert.is(seen.headers['x-opencode-directory'], encodeURIComponent('/tmp/répertoire spécial'))
  assert.equal(seen.query, [['directory', '/tmp/répertoire spécial']])
})

proxy('hop-by-hop, cookie and upstream CORS headers are not forwarded to the client', async () => {
  const res = await ctx.kit.req('/sidecar/echo', { as: 'owner', headers: { origin: 'https://evil.example' } })
  assert.is(res.headers.get('x-upstream'), 'kept')
  for (const name of ['x-hop', 'keep-alive', 'set-cookie', 'access-control-allow-origin', 'connection'])
    assert.is(res.headers.get(name), null, name)
})

proxy('a gzip upstream body reaches the client decoded with no stale content-encoding or content-length', async () => {
  const res = await ctx.kit.req('/sidecar/gzip', { as: 'owner' })
  assert.is(res.headers.get('content-encoding'), null)
  assert.is(res.headers.get('content-length'), null)
  const body = await res.json()
  assert.is(body.compressed, true)
})

proxy('upstream 5xx answers pass through with their body and headers', async () => {
  const res = await ctx.kit.req('/sidecar/status/500', { as: 'owner' })
  assert.is(res.status, 500)
  assert.is((await res.json()).data.message, 'boom from upstream')
  const busy = await ctx.kit.req('/sidecar/status/503', { as: 'owner' })
  assert.is(busy.status, 503)
  assert.is(busy.headers.get('retry-after'), '3')
  assert.is(await busy.text(), 'upstream overloaded')
})

proxy('redirects are refused, never followed, and nothing reaches the redirect target', async () => {
  const res = await ctx.kit.req('/sidecar/redirect', { as: 'owner', method: 'POST', body: 'secret body' })
  assert.is(res.status, 502)
  const body = await res.json()
  assert.is(body.code, 'sidecar_redirect_refused')
  assert.is(body.details.status, 307)
  assert.is(res.headers.get('location'), null)
  assert.is(ctx.fake.stolen, 0)
})

proxy('a refused connection is 502 sidecar_unreachable naming the cause', async () => {
  const res = await ctx.kit.req(`/w/${ctx.kit.wsIds[4]}/sidecar/global/health`)
  assert.is(res.status, 502)
  const body = await res.json()
  assert.is(body.code, 'sidecar_unreachable')
  assert.is(body.details.cause, 'ECONNREFUSED')
  assert.is(body.details.path, '/global/health')
})

proxy(
  'a stalled upstream is 502 sidecar_unreachable with cause timeout and the upstream request is aborted',
  async () => {
    const started = Date.now()
    const res = await ctx.kit.req('/sidecar/stall', { as: 'owner' })
    assert.is(res.status, 502)
    const body = await res.json()
    assert.equal([body.code, body.details.cause], ['sidecar_unreachable', 'timeout'])
    assert.ok(Date.now() - started < 4000)
    await eventually(() => ctx.fake.aborts.includes('/stall'), 'upstream abort')
  },
)

proxy('credentials the sidecar rejects are 502 sidecar_auth_failed, without a browser login prompt', async () => {
  const res = await ctx.kit.req(`/w/${ctx.kit.wsIds[5]}/sidecar/config`)
  assert.is(res.status, 502)
  assert.is((await res.json()).code, 'sidecar_auth_failed')
  assert.is(res.headers.get('www-authenticate'), null)
})

proxy('a workspace without a sidecar is 400 sidecar_unconfigured and an unknown mount id is 404', async () => {
  const res = await ctx.kit.req(`/w/${ctx.kit.wsIds[3]}/sidecar/global/health`)
  assert.is(res.status, 400)
  assert.is((await res.json()).code, 'sidecar_unconfigured')
  const unknown = await ctx.kit.req('/w/ws_nope/sidecar/global/health')
  assert.is(unknown.status, 404)
  assert.is((await unknown.json()).code, 'workspace_not_found')
  const anonymous = await ctx.kit.req('/sidecar/global/health', { as: 'none' })
  assert.is(anonymous.status, 401)
})

proxy(
  'viewers may only GET and HEAD; collaborators may reply to permission prompts; global writes need an owner',
  async () => {
    assert.is((await ctx.kit.req('/sidecar/global/health', { as: 'viewer' })).status, 200)
    const head = await ctx.kit.req('/sidecar/global/health', { as: 'viewer', method: 'HEAD' })
    assert.is(head.status, 200)
    assert.is(await head.text(), '')
    const before = ctx.fake.requests.length
    const post = await ctx.kit.req('/sidecar/permission/per_1/reply', {
      as: 'viewer',
      method: 'POST',
      json: { reply: 'once' },
    })
    assert.is(post.status, 403)
    assert.equal((await post.json()).details, { required: 'collaborator', scope: 'viewer' })
    assert.is(ctx.fake.requests.length, before, 'a refused request reached the sidecar')
    const reply = await ctx.kit.req('/sidecar/permission/per_1/reply', { method: 'POST', json: { reply: 'once' } })
    assert.is(reply.status, 404, 'forwarded; the fake has no such permission')
    assert.is(last('/permission/per_1/reply').method, 'POST')
    const global = await ctx.kit.req('/sidecar/global/dispose', { method: 'POST' })
    assert.is(global.status, 403)
    assert.is((await ctx.kit.req('/sidecar/global/dispose', { method: 'POST', as: 'owner' })).status, 404)
    assert.is(last('/global/dispose').method, 'POST')
  },
)

proxy(
  'dot segments cannot climb out of the policy: an encoded traversal to a global route is still owner-only',
  async () => {
    const before = ctx.fake.requests.filter((r) => r.path === '/global/dispose').length
    const res = await ctx.kit.req('/sidecar/session/%2e%2e/global/dispose', { method: 'POST' })
    assert.is(res.status, 403)
    assert.is(ctx.fake.requests.filter((r) => r.path === '/global/dispose').length, before)
  },
)

proxy(
  'path variants OpenCode routes loosely are refused or checked as it routes them: //, ;suffix and letter case',
  async () => {
    const before = ctx.fake.requests.length
    for (const path of [
      '/sidecar//global/dispose',
      '/sidecar//session/ses_x',
      '/sidecar/session//ses_x',
      '/sidecar/session/ses_x;x',
    ]) {
      const method = path.includes('dispose') ? 'POST' : 'GET'
      const res = await ctx.kit.req(path, { method, as: 'owner' })
      assert.equal([res.status, (await res.json()).code], [400, 'invalid_sidecar_path'], path)
      // A collaborator is refused too: by the ambiguity check, or earlier when no allow-list row matches.
      assert.ok([400, 403].includes((await ctx.kit.req(path, { method })).status), path)
    }
    assert.is(
      (await ctx.kit.req('/sidecar/Global/dispose', { method: 'POST' })).status,
      403,
      'an owner-only route in another case',
    )
    assert.is(ctx.fake.requests.length, before, 'none of them reached the sidecar')
  },
)

proxy('a read-only server refuses proxied writes with 403 read_only and still forwards reads', async () => {
  const ro = await startSidecarApp({
    workspaces: [{ sidecar: { baseUrl: ctx.fake.url, password: PASSWORD } }],
    readOnly: true,
  })
  try {
    const res = await ro.req('/sidecar/session', { method: 'POST', json: {} })
    assert.is(res.status, 403)
    assert.is((await res.json()).code, 'read_only')
    assert.is((await ro.req('/sidecar/global/health')).status, 200)
  } finally {
    await ro.dispose()
  }
})

proxy('a session of another workspace directory answers 404 session_not_found and is never forwarded', async () => {
  assert.is((await ctx.kit.req('/sidecar/session/ses_own')).status, 200)
  const foreign = await ctx.kit.req('/sidecar/session/ses_foreign')
  assert.is(foreign.status, 404)
  assert.is((await foreign.json()).code, 'session_not_found')
  const posts = () =>
    ctx.fake.requests.filter((r) => r.method === 'POST' && r.path.startsWith('/session/ses_foreign')).length
  const before = posts()
  const write = await ctx.kit.req('/sidecar/session/ses_foreign/message', { method: 'POST', json: { parts: [] } })
  assert.is(write.status, 404)
  assert.is(posts(), before)
  assert.is(
    (await ctx.kit.req(`/w/${ctx.kit.wsIds[1]}/sidecar/session/ses_foreign`)).status,
    200,
    'the owner workspace still reads it',
  )
  assert.is(
    (await ctx.kit.req('/sidecar/session/ses_unknown')).status,
    404,
    "unknown sessions get the sidecar's own 404",
  )
})

proxy('engine reload disposes the pinned instance, is audited, and times out with 504', async () => {
  const id = ctx.kit.wsIds[0]!
  const res = await ctx.kit.req(`/workspace/${id}/engine/reload`, { method: 'POST' })
  assert.is(res.status, 200)
  const body = await res.json()
  assert.equal([body.ok, body.workspaceId], [true, id])
  const call = last('/instance/dispose')
  assert.equal(
    [call.method, call.headers.authorization, call.query],
    ['POST', BASIC, [['directory', ctx.kit.roots[0]]]],
  )
  const audit = await ctx.kit.app.services.audit.list(id, 10)
  assert.ok(
    audit.some((e) => e.action === 'engine.reload'),
    'reload not audited',
  )
  assert.is((await ctx.kit.req(`/workspace/${id}/engine/reload`, { method: 'POST', as: 'viewer' })).status, 403)
  ctx.fake.options = { ...ctx.fake.options, disposeDelayMs: 1500 }
  try {
    const slow = await ctx.kit.req(`/workspace/${id}/engine/reload`, { method: 'POST' })
    assert.is(slow.status, 504)
    assert.is((await slow.json()).code, 'sidecar_reload_timeout')
  } finally {
    ctx.fake.options = { ...ctx.fake.options, disposeDelayMs: 0 }
  }
  const none = await ctx.kit.req(`/workspace/${ctx.kit.wsIds[3]}/engine/reload`, { method: 'POST' })
  assert.is((await none.json()).code, 'sidecar_unconfigured')
})

proxy('extension writes do not reload the sidecar unless configured', async () => {
  assert.is(ctx.kit.app.sidecar.extensionsChanged(ctx.kit.wsIds[0]!), false)
  const disposes = () => ctx.fake.requests.filter((r) => r.path === '/instance/dispose').length
  const before = disposes()
  assert.is(
    (await ctx.kit.req(`/workspace/${ctx.kit.wsIds[0]}/plugins`, { method: 'POST', json: { spec: 'quiet-plugin' } }))
      .status,
    200,
  )
  await new Promise((r) => setTimeout(r, 300))
  assert.is(disposes(), before)
})

proxy('with reloadOnExtensionChange, a burst of extension writes produces one debounced, audited reload', async () => {
  const auto = await startSidecarApp({
    workspaces: [{ sidecar: { baseUrl: ctx.fake.url, password: PASSWORD } }],
    file: { sidecar: { reloadOnExtensionChange: true, reloadDebounceMs: 150 } },
  })
  try {
    const mine = () =>
      ctx.fake.requests.filter((r) => r.path === '/instance/dispose' && r.query.some(([, v]) => v === auto.roots[0]))
        .length
    for (const spec of ['plugin-one', 'plugin-two', 'plugin-three']) {
      assert.is((await auto.req(`/workspace/${auto.wsIds[0]}/plugins`, { method: 'POST', json: { spec } })).status, 200)
    }
    await eventually(() => mine() === 1, 'automatic reload')
    await new Promise((r) => setTimeout(r, 400))
    assert.is(mine(), 1, 'writes in one burst must reload once')
    const audit = await auto.app.services.audit.list(auto.wsIds[0]!, 10)
    assert.ok(audit.some((e) => e.action === 'engine.reload' && e.summary.includes('extension-change')))
  } finally {
    await auto.dispose()
  }
})

proxy('a managed sidecar binary that cannot start leaves the proxy answering 502 with cause starting', async () => {
  const broken = await startSidecarApp({ file: { sidecar: { bin: '/nonexistent/opencode-binary' } } })
  try {
    assert.is(await broken.app.sidecar.start(), false)
    assert.is(broken.app.sidecar.managed!.status.state, 'restarting')
    const res = await broken.req('/sidecar/global/health')
    assert.is(res.status, 502)
    assert.equal((await res.json()).details.cause, 'starting')
  } finally {
    await broken.dispose()
  }
  assert.is(broken.app.sidecar.managed!.status.state, 'stopped')
})

proxy('sidecar status reports reachability and version per workspace without credentials', async () => {
  const overview = await ctx.kit.app.sidecar.overview()
  const [ok, , , none, dead, denied] = ctx.kit.wsIds.map((id) => overview.workspaces[id]!)
  assert.equal([ok!.configured, ok!.reachable, ok!.version, ok!.baseUrl], [true, true, 'fake-1.0', ctx.fake.url])
  assert.equal([none!.configured, none!.reachable], [false, false])
  assert.equal([dead!.reachable, dead!.error], [false, { code: 'sidecar_unreachable', cause: 'ECONNREFUSED' }])
  assert.equal(denied!.error, { code: 'sidecar_auth_failed', status: 401 })
  assert.not.ok(JSON.stringify(overview).includes(PASSWORD))
  const status = await (await ctx.kit.req('/status', { as: 'viewer' })).json()
  assert.equal(
    [status.sidecar.workspaces[ctx.kit.wsIds[0]!].reachable, status.sidecar.workspaces[ctx.kit.wsIds[0]!].version],
    [true, 'fake-1.0'],
  )
  assert.is(status.sidecar.workspaces[ctx.kit.wsIds[4]!].error.cause, 'ECONNREFUSED')
  const caps = await (await ctx.kit.req('/capabilities', { as: 'viewer' })).json()
  assert.is(caps.proxy.sidecar, true)
  assert.equal(caps.proxy.workspaces[ctx.kit.wsIds[0]!], { configured: true, reachable: true, version: 'fake-1.0' })
  assert.equal(caps.proxy.workspaces[ctx.kit.wsIds[3]!], { configured: false, reachable: false, version: null })
})

proxy('no route returns the sidecar password', async () => {
  const paths = ctx.kit.app.routes
    .filter((r) => r.method === 'GET' && !r.path.includes('/sidecar/'))
    .map((r) => r.path.replaceAll(':id', ctx.kit.wsIds[0]!))
  assert.ok(paths.includes('/status') && paths.includes('/workspaces'))
  for (const path of paths.filter((p) => !p.includes(':'))) {
    for (const as of ['owner', 'viewer'] as const) {
      const res = await ctx.kit.req(path, {
        as,
        headers: { 'x-service-host-token': 'sidecar-kit-host-token-0123456789ab', accept: 'application/json' },
      })
      const text = res.headers.get('content-type')?.includes('event-stream') ? '' : await res.text()
      assert.not.ok(text.includes(PASSWORD), `${path} leaked the sidecar password`)
      assert.not.ok(text.includes('wrong-password'), `${path} leaked a sidecar password`)
    }
  }
})

proxy('the /w/:id mount reaches the other workspace routes and refuses a mismatched nested id', async () => {
  const [a, b] = ctx.kit.wsIds
  assert.is((await ctx.kit.req(`/w/${a}/health`, { as: 'none' })).status, 200)
  const list = await ctx.kit.req(`/w/${a}/workspaces`)
  assert.is(list.status, 200)
  assert.ok((await list.json()).items.length >= 2)
  assert.is((await ctx.kit.req(`/w/${a}/workspace/${a}/config`)).status, 200)
  assert.is((await ctx.kit.req(`/w/${a}/workspace/${b}/config`)).status, 404)
  assert.is((await ctx.kit.req('/w/ws_unknown/health', { as: 'none' })).status, 404)
})

proxy.run()

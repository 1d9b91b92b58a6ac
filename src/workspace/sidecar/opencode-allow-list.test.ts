/**
 * The allow-list and the WebSocket relay against the real OpenCode server (npm `opencode-ai`): every
 * route OpenCode's own OpenAPI document lists is classified, a terminal created through the proxy is
 * driven over a relayed WebSocket, and workspaces cannot reach each other's terminals or files.
 * One managed `opencode serve` is shared by two workspaces; the app listens on a real socket.
 */
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { assert, suite, tempDir } from '../../../tests/harness.ts'
import { hashToken } from '../../core/secrets.ts'
import { type Listener, serve } from '../../serve.ts'
import { isolatedOpencodeEnv, OPENCODE_BIN } from './opencode-env.ts'
import { SIDECAR_ROUTES } from './route-table.ts'
import { type SidecarApp, startSidecarApp } from '../testing/sidecar-test-kit.ts'

const ctx: { home: { path: string; remove(): void }; kit: SidecarApp; listener: Listener; base: string } = {} as never
const oc = suite<typeof ctx>('workspace/sidecar allow-list and WebSocket relay against the real OpenCode', {
  timeoutMs: 90_000,
})

oc.before(async () => {
  ctx.home = tempDir('svc-opencode-ws-home-')
  ctx.kit = await startSidecarApp({
    workspaces: [{}, {}],
    file: {
      sidecar: {
        bin: OPENCODE_BIN,
        env: isolatedOpencodeEnv(ctx.home.path),
        startTimeoutMs: 40_000,
        heartbeatMs: 60_000,
        // Lookups and socket upgrades get room on a loaded machine.
        eventEstablishTimeoutMs: 20_000,
      },
    },
  })
  if (!(await ctx.kit.app.sidecar.start())) throw new Error('the managed OpenCode server did not become healthy')
  ctx.listener = await serve({ host: '127.0.0.1', port: 0, fetch: ctx.kit.app.fetch })
  ctx.base = `127.0.0.1:${ctx.listener.port}`
})

oc.after(async () => {
  await ctx.listener?.stop()
  await ctx.kit?.dispose()
  ctx.home?.remove()
})

/** `METHOD /path` with every parameter written `{}` and a greedy tail written `*`. */
const shape = (method: string, path: string) =>
  `${method.toUpperCase()} ${path.replace(/\{[^}]+\}|:\w+(?!\+)\b/g, '{}').replace(/:\w+\+/g, '*')}`

oc("every route in OpenCode's own OpenAPI document is classified by the allow-list, and no row is stale", async () => {
  const managed = ctx.kit.app.sidecar.managed!
  const res = await fetch(`${managed.baseUrl}/doc`, {
    headers: { authorization: `Basic ${btoa(`${managed.username}:${managed.password}`)}` },
  })
  assert.is(res.status, 200)
  const doc = (await res.json()) as { paths: Record<string, Record<string, unknown>> }
  const theirs = new Set<string>()
  for (const [path, item] of Object.entries(doc.paths))
    for (const method of Object.keys(item))
      if (['get', 'post', 'put', 'patch', 'delete'].includes(method)) theirs.add(shape(method, path))
  const ours = new Set(SIDECAR_ROUTES.map((e) => shape(e.method, e.path)))
  assert.ok(theirs.size > 150, `only ${theirs.size} routes in the document`)
  assert.equal([...theirs].filter((r) => !ours.has(r)).sort(), [], 'routes the allow-list does not classify')
  assert.equal([...ours].filter((r) => !theirs.has(r)).sort(), [], 'rows OpenCode no longer serves')
})

/** Opens a WebSocket and collects what it receives. */
function open(url: string, init?: { headers?: Record<string, string> }) {
  // Bun's WebSocket takes headers (non-standard); browsers use the ticket instead.
  const ws = new WebSocket(url, init as never)
  ws.binaryType = 'arraybuffer'
  let text = ''
  const closed = new Promise<{ code: number; reason: string }>((resolve) => {
    ws.onclose = (event) => resolve({ code: event.code, reason: event.reason })
  })
  const opened = new Promise<boolean>((resolve) => {
    ws.onopen = () => resolve(true)
    ws.onerror = () => resolve(false)
  })
  ws.onmessage = (event) => {
    text += typeof event.data === 'string' ? event.data : new TextDecoder().decode(event.data as ArrayBuffer)
  }
  return {
    ws,
    opened,
    closed,
    output: () => text,
    /**
     * Types `input` once the terminal has attached (its cursor frame arrived) and waits for `expect`.
     * OpenCode starts reading input just after that frame, and a shell discards typeahead while its
     * line editor takes the terminal, so the input is typed again if nothing came back.
     */
    async type(input: string, expect: RegExp) {
      await this.until(/\{"cursor":\d+\}/, 20_000)
      const deadline = Date.now() + 30_000
      while (!expect.test(text)) {
        if (Date.now() > deadline) throw new Error(`no ${expect} in ${JSON.stringify(text.slice(-300))}`)
        ws.send(input)
        await this.until(expect, 3000).catch(() => {})
      }
    },
    async until(pattern: RegExp, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs
      while (!pattern.test(text)) {
        if (Date.now() > deadline) throw new Error(`no ${pattern} in ${JSON.stringify(text.slice(-300))}`)
        await new Promise((r) => setTimeout(r, 25))
      }
    },
  }
}

async function createPty(mount: string): Promise<string> {
  const res = await ctx.kit.req(`${mount}/pty`, { method: 'POST', json: { title: 'relay test' } })
  assert.is(res.status, 200)
  return ((await res.json()) as { id: string }).id
}

async function ticketFor(mount: string, ptyId: string, as: 'collaborator' | 'viewer' = 'collaborator') {
  return ctx.kit.req(`${mount}/pty/${ptyId}/connect-token`, { method: 'POST', as })
}

oc('a terminal created through the proxy is driven over the relayed WebSocket with a browser ticket', async () => {
  const mount = `/w/${ctx.kit.wsIds[0]}/sidecar`
  const id = await createPty(mount)
  const tokenRes = await ticketFor(mount, id)
  assert.is(tokenRes.status, 200)
  const { ticket, expires_in } = (await tokenRes.json()) as { ticket: string; expires_in: number }
  assert.is(expires_in, 30)
  const socket = open(`ws://${ctx.base}${mount}/pty/${id}/connect?ticket=${encodeURIComponent(ticket)}`)
  assert.ok(await socket.opened, 'the relayed socket did not open')
  await socket.type('echo relay-ok\n', /[\r\n]relay-ok\r\n/)
  assert.is(
    ctx.kit.app.sidecar.sockets.openCount({ type: 'remote', scope: 'collaborator', tokenHash: ticketHolder() }),
    1,
  )
  socket.ws.close(4001, 'client done')
  assert.equal(await socket.closed, { code: 4001, reason: 'client done' })
  const deadline = Date.now() + 5000
  while (
    ctx.kit.app.sidecar.sockets.openCount({ type: 'remote', scope: 'collaborator', tokenHash: ticketHolder() }) > 0
  ) {
    if (Date.now() > deadline) throw new Error('the relay slot was not released')
    await new Promise((r) => setTimeout(r, 25))
  }
  // The ticket worked once.
  const again = open(`ws://${ctx.base}${mount}/pty/${id}/connect?ticket=${encodeURIComponent(ticket)}`)
  assert.is(await again.opened, false, 'a used ticket opened a socket')
})

/** The configured client token's hash, which relayed sockets of collaborator callers count against. */
const ticketHolder = () => hashToken(ctx.kit.tokens.collaborator)

oc('when the terminal ends upstream the client socket is closed, with the bearer token as the credential', async () => {
  const mount = '/sidecar'
  const id = await createPty(mount)
  const socket = open(`ws://${ctx.base}${mount}/pty/${id}/connect`, {
    headers: { authorization: `Bearer ${ctx.kit.tokens.collaborator}` },
  })
  assert.ok(await socket.opened)
  await socket.type('echo second-ok\n', /[\r\n]second-ok\r\n/)
  const removed = await ctx.kit.req(`${mount}/pty/${id}`, { method: 'DELETE' })
  assert.is(removed.status, 200)
  const closed = await socket.closed
  assert.ok([1000, 4404].includes(closed.code), `closed with ${closed.code}`)
})

oc("viewers and other workspaces cannot open or ticket a workspace's terminal", async () => {
  const mineMount = `/w/${ctx.kit.wsIds[0]}/sidecar`
  const otherMount = `/w/${ctx.kit.wsIds[1]}/sidecar`
  const id = await createPty(mineMount)
  const viewerTicket = await ticketFor(mineMount, id, 'viewer')
  assert.is(viewerTicket.status, 403)
  const viewerSocket = open(`ws://${ctx.base}${mineMount}/pty/${id}/connect`, {
    headers: { authorization: `Bearer ${ctx.kit.tokens.viewer}` },
  })
  assert.is(await viewerSocket.opened, false, 'a viewer opened a terminal')
  const foreignTicket = await ticketFor(otherMount, id)
  assert.is(foreignTicket.status, 404, "another workspace got a ticket for this workspace's terminal")
  const foreignSocket = open(`ws://${ctx.base}${otherMount}/pty/${id}/connect`, {
    headers: { authorization: `Bearer ${ctx.kit.tokens.collaborator}` },
  })
  assert.is(await foreignSocket.opened, false, "another workspace opened this workspace's terminal")
  const { ticket } = (await (await ticketFor(mineMount, id)).json()) as { ticket: string }
  const misused = open(`ws://${ctx.base}${otherMount}/pty/${id}/connect?ticket=${encodeURIComponent(ticket)}`)
  assert.is(await misused.opened, false, "a ticket opened another workspace's mount")
  await ctx.kit.req(`${mineMount}/pty/${id}`, { method: 'DELETE' })
})

oc('a collaborator of one workspace changes nothing in another: sessions, config and terminals', async () => {
  const a = `/w/${ctx.kit.wsIds[0]}/sidecar`
  const b = `/w/${ctx.kit.wsIds[1]}/sidecar`
  const created = await ctx.kit.req(`${b}/session`, { method: 'POST', json: { title: 'b only' } })
  const session = (await created.json()) as { id: string; directory: string }
  assert.is(session.directory, ctx.kit.roots[1])
  for (const [method, path, json] of [
    ['PATCH', `${a}/session/${session.id}`, { title: 'hijacked' }],
    ['DELETE', `${a}/session/${session.id}`, undefined],
    ['POST', `${a}/session/${session.id}/shell`, { agent: 'build', command: 'touch pwned' }],
    ['POST', `${a}/session`, { parentID: session.id }],
    ['POST', `${a}/tui/select-session`, { sessionID: session.id }],
  ] as const) {
    const res = await ctx.kit.req(path, { method, ...(json ? { json } : {}) })
    assert.is(res.status, 404, `${method} ${path}`)
  }
  const v2 = await ctx.kit.req(`${a}/api/session`, {
    method: 'POST',
    json: { title: 'v2', location: { directory: ctx.kit.roots[1] } },
  })
  assert.is(v2.status, 200, await v2.clone().text())
  const v2Session = (await v2.json()) as { id?: string; data?: { id: string } }
  const v2Id = v2Session.id ?? v2Session.data?.id
  const lookedUp = (await (await ctx.kit.req(`${a}/session/${v2Id}`)).json()) as { directory: string }
  assert.is(lookedUp.directory, ctx.kit.roots[0], 'the V2 session was created outside the mount')
  const still = (await (await ctx.kit.req(`${b}/session/${session.id}`)).json()) as { title: string }
  assert.is(still.title, 'b only')
  const config = await ctx.kit.req(`${a}/global/config`, { method: 'PATCH', json: { theme: 'x' } })
  assert.is(config.status, 403)
})

oc('a viewer gets no byte from outside the workspace through file routes with symlinks planted inside', async () => {
  const outside = join(ctx.kit.dir, 'outside-secret')
  mkdirSync(outside)
  writeFileSync(join(outside, 'secret.txt'), 'TOP-SECRET-OUTSIDE')
  const root = ctx.kit.roots[0]!
  symlinkSync(outside, join(root, 'planted-dir'))
  symlinkSync(join(outside, 'secret.txt'), join(root, 'planted.txt'))
  const mount = `/w/${ctx.kit.wsIds[0]}/sidecar`
  for (const path of [
    '/file/content?path=planted.txt',
    '/file/content?path=planted-dir/secret.txt',
    '/file?path=planted-dir',
    '/api/fs/read/planted.txt',
    '/api/fs/read/planted-dir/secret.txt',
    '/api/fs/list?path=planted-dir',
    '/find/file?query=secret',
    '/api/fs/find?query=secret',
    '/find?pattern=TOP-SECRET',
  ]) {
    const res = await ctx.kit.req(mount + path, { as: 'viewer' })
    const text = await res.text()
    assert.not.ok(
      text.includes('TOP-SECRET') || text.includes('secret.txt'),
      `${path}: ${res.status} ${text.slice(0, 200)}`,
    )
  }
})

oc.run()

/**
 * Integration against the real OpenCode server (npm `opencode-ai`). One `opencode serve` is started
 * for the whole suite, by the managed-sidecar code itself (a loopback port and a generated
 * `OPENCODE_SERVER_PASSWORD`), and shared by a second server configured the reference way
 * (`opencodeBaseUrl` + `opencodePassword`). The last test kills it to prove the restart.
 */
import { execFileSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { assert, suite, takeSse, tempDir } from '../../../tests/harness.ts'
import { isolatedOpencodeEnv, OPENCODE_BIN } from './opencode-env.ts'
import { startSidecarApp, type SidecarApp } from '../testing/sidecar-test-kit.ts'
import { startFakeControlPlane } from '../testing/fake-control-plane.ts'

const ctx: {
  home: { path: string; remove(): void }
  managed: SidecarApp
  ref: SidecarApp
  baseUrl: string
  password: string
  startMs: number
} = {} as never
const oc = suite<typeof ctx>('workspace/sidecar against the real OpenCode server', { timeoutMs: 45_000 })

oc.before(async () => {
  ctx.home = tempDir('svc-opencode-home-')
  ctx.managed = await startSidecarApp({
    file: {
      sidecar: {
        bin: OPENCODE_BIN,
        env: isolatedOpencodeEnv(ctx.home.path),
        startTimeoutMs: 40_000,
        heartbeatMs: 60_000,
      },
    },
  })
  const started = performance.now()
  const ok = await ctx.managed.app.sidecar.start()
  ctx.startMs = Math.round(performance.now() - started)
  if (!ok) throw new Error('the managed OpenCode server did not become healthy')
  ctx.baseUrl = ctx.managed.app.sidecar.managed!.baseUrl!
  ctx.password = ctx.managed.app.sidecar.managed!.password
  // A second server pointed at the same sidecar with the reference's flat keys, two workspaces.
  ctx.ref = await startSidecarApp({
    workspaces: [{}, {}],
    file: { opencodeBaseUrl: ctx.baseUrl, opencodePassword: ctx.password },
  })
})

oc.after(async () => {
  await ctx.ref?.dispose()
  await ctx.managed?.dispose()
  ctx.home?.remove()
})

oc(
  'health answers through both mounts with the sidecar version, and the sidecar itself demands credentials',
  async () => {
    assert.ok(ctx.startMs < 40_000)
    const direct = await fetch(`${ctx.baseUrl}/global/health`)
    assert.is(direct.status, 401, 'the managed sidecar must be password-protected')
    await direct.body?.cancel()
    for (const path of ['/sidecar/global/health', `/w/${ctx.ref.wsIds[1]}/sidecar/global/health`]) {
      const res = await ctx.ref.req(path, { as: 'viewer' })
      assert.is(res.status, 200, path)
      const body = await res.json()
      assert.is(body.healthy, true)
      assert.match(body.version, /^\d+\.\d+\.\d+/)
    }
  },
)

oc('config is read through the proxy', async () => {
  const res = await ctx.managed.req('/sidecar/config')
  assert.is(res.status, 200)
  const body = await res.json()
  assert.is(typeof body, 'object')
  assert.ok('$schema' in body || 'agent' in body, 'not an OpenCode config document')
})

oc(
  'files delivered by a linked organization are what the managed OpenCode lists: skill, command, MCP entry',
  async () => {
    const cp = await startFakeControlPlane()
    try {
      const id = ctx.managed.wsIds[0]!
      const started = await ctx.managed.req(`/workspace/${id}/org/link`, {
        method: 'POST',
        as: 'owner',
        json: { controlPlaneUrl: cp.url },
      })
      assert.is(started.status, 202)
      cp.approve(((await started.json()) as { userCode: string }).userCode)
      cp.deliver([
        {
          objectId: 'obj_skill',
          type: 'skill',
          name: 'org-deploy',
          files: [
            {
              path: 'SKILL.md',
              content: '---\nname: org-deploy\ndescription: Deploy the organization way\n---\nRun scripts/go.sh\n',
            },
            { path: 'scripts/go.sh', content: '#!/bin/sh\necho go\n', executable: true },
          ],
        },
        {
          objectId: 'obj_cmd',
          type: 'command',
          name: 'org-review',
          files: [
            {
              path: 'org-review.md',
              content: '---\ndescription: Review the organization way\n---\nReview $ARGUMENTS\n',
            },
          ],
        },
        {
          objectId: 'obj_mcp',
          type: 'mcp',
          name: 'org-docs',
          config: { mcp: { 'org-docs': { type: 'remote', url: 'https://mcp.example.invalid/docs', enabled: false } } },
        },
      ])
      await waitFor(async () => {
        const r = await ctx.managed.req(`/workspace/${id}/org`, { as: 'owner' })
        return ((await r.json()) as { delivered: unknown[] }).delivered.length === 3
      }, 'delivered')
      await waitFor(async () => {
        const skills = await (await ctx.managed.req('/sidecar/skill', { as: 'viewer' })).text()
        const commands = await (await ctx.managed.req('/sidecar/command', { as: 'viewer' })).text()
        return skills.includes('org-deploy') && commands.includes('org-review')
      }, 'OpenCode lists the delivered skill and command')
      const config = (await (await ctx.managed.req('/sidecar/config', { as: 'viewer' })).json()) as {
        mcp?: Record<string, unknown>
      }
      assert.ok(config.mcp?.['org-docs'], 'the delivered MCP entry is in the config OpenCode loaded')
      const unlinked = await ctx.managed.req(`/workspace/${id}/org?remove=true`, { method: 'DELETE', as: 'owner' })
      assert.is(unlinked.status, 200)
    } finally {
      await cp.close()
    }
  },
)

async function waitFor(check: () => Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
}

oc('the directory is pinned: spoofed query and header values are replaced by the workspace path', async () => {
  const res = await ctx.ref.req('/sidecar/path?directory=/etc&directory=%2Ftmp', {
    headers: { 'x-opencode-directory': '/usr' },
  })
  assert.is(res.status, 200)
  assert.is((await res.json()).directory, ctx.ref.roots[0])
  const second = await ctx.ref.req(`/w/${ctx.ref.wsIds[1]}/sidecar/path?directory=/etc`)
  assert.is((await second.json()).directory, ctx.ref.roots[1])
})

oc('sessions are created, listed, renamed and deleted per workspace; another workspace sees 404', async () => {
  const created = await ctx.ref.req('/sidecar/session', { method: 'POST', json: { title: 'through the proxy' } })
  assert.is(created.status, 200)
  const session = await created.json()
  assert.match(session.id, /^ses_/)
  assert.is(session.directory, ctx.ref.roots[0])
  const list = await (await ctx.ref.req('/sidecar/session')).json()
  assert.ok(list.some((s: { id: string }) => s.id === session.id))
  const otherList = await (await ctx.ref.req(`/w/${ctx.ref.wsIds[1]}/sidecar/session`)).json()
  assert.not.ok(
    otherList.some((s: { id: string }) => s.id === session.id),
    'a session leaked into another workspace list',
  )
  const foreign = await ctx.ref.req(`/w/${ctx.ref.wsIds[1]}/sidecar/session/${session.id}`)
  assert.is(foreign.status, 404)
  assert.is((await foreign.json()).code, 'session_not_found')
  const foreignDelete = await ctx.ref.req(`/w/${ctx.ref.wsIds[1]}/sidecar/session/${session.id}`, { method: 'DELETE' })
  assert.is(foreignDelete.status, 404)
  const renamed = await ctx.ref.req(`/sidecar/session/${session.id}`, { method: 'PATCH', json: { title: 'renamed' } })
  assert.is(renamed.status, 200)
  assert.is((await renamed.json()).title, 'renamed')
  const deleted = await ctx.ref.req(`/sidecar/session/${session.id}`, { method: 'DELETE' })
  assert.is(deleted.status, 200)
  const gone = await ctx.ref.req(`/sidecar/session/${session.id}`)
  assert.is(gone.status, 404)
})

oc('viewer tokens can read sessions but not create them', async () => {
  const before = (await (await ctx.ref.req('/sidecar/session', { as: 'viewer' })).json()).length
  const refused = await ctx.ref.req('/sidecar/session', { as: 'viewer', method: 'POST', json: { title: 'nope' } })
  assert.is(refused.status, 403)
  assert.is((await refused.json()).code, 'forbidden')
  assert.is((await (await ctx.ref.req('/sidecar/session')).json()).length, before)
})

oc('collaborators reach the permission reply route', async () => {
  const res = await ctx.ref.req('/sidecar/permission/per_missing/reply', { method: 'POST', json: { reply: 'once' } })
  assert.not.ok(res.status === 401 || res.status === 403, `refused with ${res.status}`)
  await res.body?.cancel()
})

oc('the event streams open with server.connected as the first frame', async () => {
  const res = await ctx.ref.req('/sidecar/event')
  assert.match(res.headers.get('content-type') ?? '', /text\/event-stream/)
  const [first] = await takeSse(res, 1, 5000)
  assert.is(JSON.parse(first!.data).type, 'server.connected')
  const global = await ctx.ref.req(`/w/${ctx.ref.wsIds[1]}/sidecar/global/event`)
  const [globalFirst] = await takeSse(global, 1, 5000)
  assert.is(JSON.parse(globalFirst!.data).payload.type, 'server.connected')
})

oc("the global event stream of one workspace does not carry another workspace's session events", async () => {
  const mine = takeSse(await ctx.ref.req('/sidecar/global/event'), 6, 2500)
  const theirs = takeSse(await ctx.ref.req(`/w/${ctx.ref.wsIds[1]}/sidecar/global/event`), 6, 2500)
  await new Promise((r) => setTimeout(r, 300))
  const created = await ctx.ref.req(`/w/${ctx.ref.wsIds[1]}/sidecar/session`, {
    method: 'POST',
    json: { title: 'other workspace' },
  })
  const session = await created.json()
  const idsIn = (frames: Array<{ data: string }>) => frames.map((f) => JSON.stringify(JSON.parse(f.data)))
  const [mineFrames, theirFrames] = await Promise.all([mine, theirs])
  assert.ok(
    idsIn(theirFrames).some((t) => t.includes(session.id)),
    'the owning workspace should see its session event',
  )
  assert.not.ok(
    idsIn(mineFrames).some((t) => t.includes(session.id)),
    'another workspace saw the session event',
  )
})

oc('engine reload disposes the workspace instance: its event stream reports the dispose', async () => {
  const stream = await ctx.ref.req('/sidecar/event')
  const iterator = takeSse(stream, 8, 8000)
  await new Promise((r) => setTimeout(r, 300))
  const reload = await ctx.ref.req(`/workspace/${ctx.ref.wsIds[0]}/engine/reload`, { method: 'POST' })
  assert.is(reload.status, 200)
  assert.is((await reload.json()).ok, true)
  const types = (await iterator).map((f) => JSON.parse(f.data).type)
  assert.ok(types.includes('server.instance.disposed'), `saw ${types.join(', ')}`)
  const audit = await ctx.ref.app.services.audit.list(ctx.ref.wsIds[0]!, 5)
  assert.is(audit[0]!.action, 'engine.reload')
})

oc('status reports the sidecar reachable with its version and without the password', async () => {
  const overview = await ctx.ref.app.sidecar.overview()
  const first = overview.workspaces[ctx.ref.wsIds[0]!]!
  assert.equal([first.configured, first.reachable], [true, true])
  assert.match(first.version ?? '', /^\d+\.\d+\.\d+/)
  assert.not.ok(JSON.stringify(overview).includes(ctx.password))
  for (const path of ['/status', '/capabilities', '/workspaces', `/workspace/${ctx.ref.wsIds[0]}/config`]) {
    const text = await (await ctx.ref.req(path, { as: 'owner' })).text()
    assert.not.ok(text.includes(ctx.password), `${path} leaked the sidecar password`)
  }
})

oc(
  'a viewer reads no MCP secret of opencode.json through the real config, file and VCS diff answers; an owner does',
  async () => {
    const root = ctx.ref.roots[1]!
    const ws = ctx.ref.wsIds[1]!
    const write = (token: string) =>
      writeFileSync(
        join(root, 'opencode.json'),
        JSON.stringify(
          {
            mcp: {
              vault: {
                type: 'remote',
                url: 'https://mcp.invalid/x',
                enabled: false,
                headers: { Authorization: token },
              },
            },
          },
          null,
          2,
        ),
      )
    const git = (...args: string[]) => execFileSync('git', args, { cwd: root, stdio: 'ignore' })
    write('Bearer sk-old-111')
    git('init', '-q')
    git('-c', 'user.email=t@t', '-c', 'user.name=t', 'add', '.')
    git('-c', 'user.email=t@t', '-c', 'user.name=t', 'commit', '-qm', 'config')
    write('Bearer sk-new-222')
    assert.is((await ctx.ref.req(`/w/${ws}/sidecar/instance/dispose`, { method: 'POST' })).status, 200)
    const paths = ['/config', '/file/content?path=opencode.json', '/vcs/diff/raw', '/vcs/diff?mode=git']
    for (const path of paths) {
      const res = await ctx.ref.req(`/w/${ws}/sidecar${path}`, { as: 'viewer' })
      assert.is(res.status, 200, path)
      const text = await res.text()
      assert.not.ok(/sk-(old|new)/.test(text), `${path}: ${text.slice(0, 300)}`)
      assert.ok(text.includes('********'), `${path} shows the mask: ${text.slice(0, 300)}`)
    }
    const clear = await (await ctx.ref.req(`/w/${ws}/sidecar/vcs/diff/raw`, { as: 'owner' })).text()
    assert.ok(clear.includes('sk-new-222') && clear.includes('sk-old-111'), clear.slice(0, 300))
  },
)

oc('a managed sidecar that dies is restarted with a new password and serves again; close stops it', async () => {
  const managed = ctx.managed.app.sidecar.managed!
  const pid = managed.status.pid!
  const oldPassword = managed.password
  process.kill(pid, 'SIGKILL')
  const deadline = Date.now() + 40_000
  while (!(managed.status.state === 'running' && managed.status.pid !== pid)) {
    if (Date.now() > deadline) throw new Error(`no restart: ${JSON.stringify(managed.status)}`)
    await new Promise((r) => setTimeout(r, 100))
  }
  assert.is(managed.status.restarts, 1)
  assert.is.not(managed.password, oldPassword)
  const res = await ctx.managed.req('/sidecar/global/health')
  assert.is(res.status, 200)
  assert.is((await res.json()).healthy, true)
  const newPid = managed.status.pid!
  await ctx.managed.app.close()
  let alive = true
  try {
    process.kill(newPid, 0)
  } catch {
    alive = false
  }
  assert.not.ok(alive, 'the managed sidecar outlived the server')
})

oc.run()

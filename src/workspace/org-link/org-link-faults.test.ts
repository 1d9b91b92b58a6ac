/**
 * The organization link against a control plane the test fully drives over real HTTP
 * (`fake-control-plane.ts`): a hostile or broken one, one that goes down and comes back on the
 * same port, one that revokes every token, and one whose feed position the restart test checks.
 * The flows against the real control plane are in `org-link.test.ts`.
 */
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { join } from 'node:path'
import { assert, suite, tempDir } from '../../../tests/harness.ts'
import {
  FAST_LINK,
  startFakeControlPlane,
  type FakeControlPlane,
  type FakeItem,
} from '../testing/fake-control-plane.ts'
import { eventually, HOST_TOKEN, startTestServer, type TestServer } from '../testing/test-kit.ts'

const test = suite('workspace/org-link-faults', { timeoutMs: 30_000 })

const skill = (name: string, body = 'Use it.', extra: FakeItem['files'] = []): FakeItem => ({
  objectId: `obj_${name}`,
  type: 'skill',
  name,
  files: [{ path: 'SKILL.md', content: `---\nname: ${name}\ndescription: ${name} skill\n---\n${body}\n` }, ...extra],
})

async function org(s: TestServer) {
  const r = await s.req(`/workspace/${s.wsId}/org`, { hostToken: HOST_TOKEN })
  return { status: r.status, body: (await r.json()) as Record<string, any> }
}

async function link(s: TestServer, cp: FakeControlPlane): Promise<void> {
  const r = await s.req(`/workspace/${s.wsId}/org/link`, {
    method: 'POST',
    hostToken: HOST_TOKEN,
    json: { controlPlaneUrl: cp.url },
  })
  assert.is(r.status, 202)
  const started = (await r.json()) as { userCode: string }
  assert.is((await org(s)).body.state, 'linking')
  cp.approve(started.userCode)
  await eventually(async () => ['in_sync', 'conflict'].includes((await org(s)).body.state), 5000, 'linked')
}

async function withLinked(
  fn: (s: TestServer, cp: FakeControlPlane) => Promise<void>,
  options: { approval?: 'manual' | 'auto' } = {},
): Promise<void> {
  const cp = await startFakeControlPlane()
  const s = await startTestServer({ fixture: false, approval: options.approval, app: { orgLinkTiming: FAST_LINK } })
  try {
    await link(s, cp)
    await fn(s, cp)
  } finally {
    await s.dispose()
    await cp.close()
  }
}

test('a hostile control plane cannot write outside the delivery area, and its bad items are refused', async () => {
  const outside = tempDir('svc-org-outside-')
  try {
    await withLinked(async (s, cp) => {
      // A skill folder that is a symlink out of the workspace must not be followed.
      mkdirSync(join(s.root, '.opencode/skills'), { recursive: true })
      symlinkSync(outside.path, join(s.root, '.opencode/skills/escape'))
      const big = 'x'.repeat(6 * 1024 * 1024)
      cp.deliver([
        skill('good'),
        skill('dots', 'x', [{ path: '../../../evil.sh', content: 'rm -rf /' }]),
        skill('absolute', 'x', [{ path: '/etc/evil', content: 'x' }]),
        skill('backslash', 'x', [{ path: '..\\..\\evil', content: 'x' }]),
        skill('escape'),
        skill('oversize', 'x', [{ path: 'big.txt', content: big }]),
        skill('lying', 'x', [{ path: 'a.txt', content: 'a', sha256: '0'.repeat(64) }]),
        { objectId: 'obj_cfg', type: 'mcp', name: 'cfg', config: { plugin: ['evil'], mcp: {} } },
        {
          objectId: 'obj_cmd',
          type: 'command',
          name: 'cmd',
          files: [{ path: '../skills/good/SKILL.md', content: 'x' }],
        },
        { objectId: 'obj_bad', type: 'skill', name: '../up', files: [{ path: 'SKILL.md', content: 'x' }] },
        { objectId: 'obj_prov', type: 'llm_provider', name: 'openai', config: { provider: {} } },
        {
          objectId: 'obj_ctx',
          type: 'context',
          name: 'ctx',
          files: [{ path: 'ctx.md', content: 'x' }],
          config: { instructions: ['/etc/passwd'] },
        },
        {
          objectId: 'obj_tool',
          type: 'tool',
          name: 'two',
          files: [
            { path: 'a.ts', content: 'x' },
            { path: 'b.ts', content: 'x' },
          ],
        },
      ])
      const view = await eventually(async () => {
        const v = (await org(s)).body
        return v.refused?.length >= 10 && v.delivered.some((d: any) => d.name === 'good') ? v : undefined
      }, 5000)
      const refused = new Map(view.refused.map((r: any) => [r.objectId, r.reason]))
      for (const id of [
        'obj_ctx',
        'obj_tool',
        'obj_dots',
        'obj_absolute',
        'obj_backslash',
        'obj_oversize',
        'obj_lying',
        'obj_cfg',
        'obj_cmd',
        'obj_bad',
        'obj_prov',
      ])
        assert.ok(refused.has(id), `${id} refused`)
      assert.ok(existsSync(join(s.root, '.opencode/skills/good/SKILL.md')))
      // The symlinked folder: the write was refused (rolled back) or planned as a conflict, never written outside.
      assert.equal(readdirSync(outside.path), [])
      assert.not.ok(existsSync(join(s.root, '..', 'evil.sh')))
      assert.not.ok(existsSync(join(s.root, '.opencode/skills/dots')))
    })
  } finally {
    outside.remove()
  }
})

test('a broken delivery document changes nothing and reports the control plane as unreachable', async () => {
  await withLinked(async (s, cp) => {
    cp.deliver([skill('kept')])
    await eventually(() => existsSync(join(s.root, '.opencode/skills/kept/SKILL.md')), 5000)
    cp.rawDelivery({ digest: 'x', items: 'not a list' })
    await eventually(async () => (await org(s)).body.state === 'unreachable', 5000)
    assert.is((await org(s)).body.lastError.code, 'org_answer_invalid')
    assert.ok(existsSync(join(s.root, '.opencode/skills/kept/SKILL.md')), 'nothing removed')
  })
})

test('an unreachable control plane removes nothing and the link recovers by itself', async () => {
  await withLinked(async (s, cp) => {
    cp.deliver([skill('steady')])
    await eventually(() => existsSync(join(s.root, '.opencode/skills/steady/SKILL.md')), 5000)
    await cp.down()
    await eventually(async () => (await org(s)).body.state === 'unreachable', 5000)
    assert.ok(existsSync(join(s.root, '.opencode/skills/steady/SKILL.md')))
    await cp.up()
    cp.deliver([skill('steady'), skill('after-outage')])
    await eventually(() => existsSync(join(s.root, '.opencode/skills/after-outage/SKILL.md')), 8000, 'recovered')
    await eventually(async () => (await org(s)).body.state === 'in_sync', 3000)
  })
})

test('a revoked token turns the link revoked, keeps the files, and unlink can remove them', async () => {
  await withLinked(async (s, cp) => {
    cp.deliver([skill('mine'), skill('edited')])
    await eventually(() => existsSync(join(s.root, '.opencode/skills/edited/SKILL.md')), 5000)
    cp.revokeAll()
    await eventually(async () => (await org(s)).body.state === 'revoked', 5000)
    assert.ok(existsSync(join(s.root, '.opencode/skills/mine/SKILL.md')), 'files stay while revoked')
    writeFileSync(join(s.root, '.opencode/skills/edited/SKILL.md'), 'my own words\n')
    const r = await s.req(`/workspace/${s.wsId}/org?remove=true`, { method: 'DELETE', hostToken: HOST_TOKEN })
    assert.is(r.status, 200)
    assert.is(((await r.json()) as { removed: number }).removed, 1)
    assert.not.ok(existsSync(join(s.root, '.opencode/skills/mine')), 'unchanged managed skill removed')
    assert.is(readFileSync(join(s.root, '.opencode/skills/edited/SKILL.md'), 'utf8'), 'my own words\n')
    assert.is((await org(s)).status, 404)
  })
})

test('a revoked link is renewed in place by linking again: its manifest is kept and it follows again', async () => {
  await withLinked(async (s, cp) => {
    cp.deliver([skill('kept')])
    await eventually(() => existsSync(join(s.root, '.opencode/skills/kept/SKILL.md')), 5000)
    cp.revokeAll()
    await eventually(async () => (await org(s)).body.state === 'revoked', 5000)
    // While linked and not revoked, linking again is refused; once revoked, it renews the link.
    const again = await s.req(`/workspace/${s.wsId}/org/link`, {
      method: 'POST',
      hostToken: HOST_TOKEN,
      json: { controlPlaneUrl: cp.url },
    })
    assert.is(again.status, 202)
    cp.approve(((await again.json()) as { userCode: string }).userCode)
    await eventually(async () => (await org(s)).body.state === 'in_sync', 5000, 'renewed')
    const view = (await org(s)).body
    assert.equal(
      view.delivered.map((d: any) => d.name),
      ['kept'],
    )
    const twice = await s.req(`/workspace/${s.wsId}/org/link`, {
      method: 'POST',
      hostToken: HOST_TOKEN,
      json: { controlPlaneUrl: cp.url },
    })
    assert.is(twice.status, 409)
    cp.deliver([skill('kept', 'v2')])
    await eventually(
      () => readFileSync(join(s.root, '.opencode/skills/kept/SKILL.md'), 'utf8').includes('v2'),
      5000,
      'follows again',
    )
  })
})

test('a restart resumes the feed from the persisted Last-Event-ID and keeps the token sealed at rest', async () => {
  const cp = await startFakeControlPlane()
  let s = await startTestServer({ fixture: false, app: { orgLinkTiming: FAST_LINK } })
  try {
    await link(s, cp)
    cp.deliver([skill('one')])
    cp.emit('config_object.version_added')
    await eventually(() => existsSync(join(s.root, '.opencode/skills/one/SKILL.md')), 5000)
    const stateFile = join(s.dir, 'data', 'org-link', `${s.wsId}.json`)
    await eventually(() => JSON.parse(readFileSync(stateFile, 'utf8')).lastEventId === '2', 3000, 'position saved')
    assert.is(statSync(stateFile).mode & 0o777, 0o600)
    const text = readFileSync(stateFile, 'utf8')
    assert.not.match(text, /oat_/)
    assert.not.match(text, /ort_/)
    s = await s.restart()
    cp.deliver([skill('one'), skill('two')])
    await eventually(() => existsSync(join(s.root, '.opencode/skills/two/SKILL.md')), 5000, 'change after restart')
    assert.is(cp.resumedFrom.at(-1), '2')
    assert.is(cp.resumedFrom[0], null)
    await eventually(async () => (await org(s)).body.state === 'in_sync', 3000)
    assert.ok(lstatSync(join(s.root, '.opencode/skills/one/SKILL.md')).isFile())
  } finally {
    await s.dispose()
    await cp.close()
  }
})

test.run()

import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { join } from 'node:path'
import { assert, suite, tempDir } from '../../../tests/harness.ts'
import { deleteCommand, writeCommand } from './commands.ts'
import { deleteSkill, prepareSkill, writeSkill } from './skills.ts'
import { CLIENT_TOKEN, startTestServer, type TestServer } from '../testing/test-kit.ts'

const test = suite('workspace/extension-containment')

const send = (s: TestServer, method: string, path: string, json?: unknown) =>
  s.req(`/workspace/${s.wsId}${path}`, { method, token: CLIENT_TOKEN, json })

/** Asserts a refusal with the data plane's containment error. */
async function refused(res: Response, what: string): Promise<void> {
  const body = await res.json()
  assert.equal([res.status, body.code], [400, 'invalid_path'], `${what}: ${JSON.stringify(body)}`)
}

/** Asserts the writer itself (past the routes' pre-checks) refuses with `invalid_path`. */
async function rejects(action: Promise<unknown>, what: string): Promise<void> {
  const code = await action.then(
    () => 'resolved',
    (error: { code?: string }) => error.code,
  )
  assert.is(code, 'invalid_path', what)
}

/** Moves `rel` (inside the workspace) to `outside` and leaves a symlink to it in its place. */
function linkOut(s: TestServer, rel: string, outside: string): void {
  cpSync(join(s.root, rel), outside, { recursive: true })
  rmSync(join(s.root, rel), { recursive: true })
  symlinkSync(outside, join(s.root, rel))
}

/** Runs `body` on a fresh server whose `rel` now lives at `<temp dir>/<name>` behind a symlink. */
async function withLinkedOut(
  rel: string,
  name: string,
  body: (s: TestServer, outside: string) => Promise<void>,
): Promise<void> {
  const s = await startTestServer()
  const out = tempDir('svc-outside-')
  try {
    const outside = join(out.path, name)
    linkOut(s, rel, outside)
    await body(s, outside)
  } finally {
    out.remove()
    await s.dispose()
  }
}

test('a skill is neither created, deleted nor listed through a .opencode/skills symlink that leads outside', () =>
  withLinkedOut('.opencode/skills', 'skills', async (s, outside) => {
    writeFileSync(join(outside, 'hello-world/precious.txt'), 'do not lose\n')

    await refused(
      await send(s, 'POST', '/skills', { name: 'evil', content: '---\ndescription: d\n---\nbody\n' }),
      'POST /skills',
    )
    assert.not.ok(existsSync(join(outside, 'evil')), 'nothing was created outside')

    await refused(await send(s, 'DELETE', '/skills/hello-world'), 'DELETE /skills/hello-world')
    assert.is(readFileSync(join(outside, 'hello-world/precious.txt'), 'utf8'), 'do not lose\n')
    assert.ok(existsSync(join(outside, 'hello-world/SKILL.md')), 'the outside skill is still there')

    // The writers themselves refuse too (a link swapped in after the route's checks).
    await rejects(
      writeSkill(s.root, await prepareSkill({ name: 'evil', content: 'body', description: 'd' })),
      'writeSkill',
    )
    await rejects(deleteSkill(s.root, 'hello-world'), 'deleteSkill')
    assert.ok(existsSync(join(outside, 'hello-world/precious.txt')))

    const list = await send(s, 'GET', '/skills')
    const text = await list.text()
    assert.is(list.status, 400)
    assert.not.ok(text.includes('hello-world'), 'outside skills are not listed')
    assert.equal(readdirSync(outside).sort(), ['hello-world', 'no-description'])
  }))

test('a skill folder that is itself a symlink out is neither written through nor followed on delete', () =>
  withLinkedOut('.opencode/skills/hello-world', 'hello-world', async (s, outside) => {
    writeFileSync(join(outside, 'precious.txt'), 'do not lose\n')
    const before = readFileSync(join(outside, 'SKILL.md'), 'utf8')

    await refused(
      await send(s, 'POST', '/skills', { name: 'hello-world', content: '---\ndescription: d\n---\nreplaced\n' }),
      'POST /skills hello-world',
    )
    assert.is(readFileSync(join(outside, 'SKILL.md'), 'utf8'), before)
    // The link is not a skill folder, so it is not listed and cannot be deleted by name.
    assert.is((await send(s, 'DELETE', '/skills/hello-world')).status, 404)
    assert.is(readFileSync(join(outside, 'precious.txt'), 'utf8'), 'do not lose\n')
  }))

test('a command is neither written nor removed through a .opencode symlink that leads outside', () =>
  withLinkedOut('.opencode', 'opencode', async (s, outside) => {
    await refused(await send(s, 'POST', '/commands', { name: 'x', template: 't' }), 'POST /commands')
    assert.equal(readdirSync(join(outside, 'commands')), ['review.md'])

    await refused(await send(s, 'DELETE', '/commands/review'), 'DELETE /commands/review')
    assert.ok(existsSync(join(outside, 'commands/review.md')), 'the outside command is still there')
    await rejects(writeCommand(s.root, { rel: '.opencode/commands/x.md', text: 't' }), 'writeCommand')
    await rejects(deleteCommand(s.root, 'review'), 'deleteCommand')
    assert.equal(readdirSync(join(outside, 'commands')), ['review.md'])

    const list = await send(s, 'GET', '/commands')
    assert.is(list.status, 400)
    assert.not.ok((await list.text()).includes('review'), 'outside commands are not listed')
  }))

test('a command is not written through a .opencode/commands symlink that leads outside', () =>
  withLinkedOut('.opencode/commands', 'commands', async (s, outside) => {
    await refused(await send(s, 'POST', '/commands', { name: 'x', template: 't' }), 'POST /commands')
    await refused(await send(s, 'DELETE', '/commands/review'), 'DELETE /commands/review')
    assert.equal(readdirSync(outside), ['review.md'])
  }))

test('a config patch does not read or rewrite service.json through a .opencode symlink that leads outside', () =>
  withLinkedOut('.opencode', 'opencode', async (s, outside) => {
    const before = readFileSync(join(outside, 'service.json'), 'utf8')

    await refused(await send(s, 'PATCH', '/config', { workspace: { pwned: true } }), 'PATCH /config workspace')
    assert.is(readFileSync(join(outside, 'service.json'), 'utf8'), before)
    assert.equal(
      readdirSync(outside).filter((n) => n.startsWith('.svc-tmp-')),
      [],
      'no temp file left outside',
    )

    const config = await send(s, 'GET', '/config')
    assert.is(config.status, 400)
    assert.not.ok((await config.text()).includes('Workspace basic'), 'the outside service.json is not returned')
  }))

test('the project config is not read or rewritten through an opencode.jsonc symlink that leads outside', async () => {
  const s = await startTestServer()
  const out = tempDir('svc-outside-')
  try {
    const outside = join(out.path, 'opencode.jsonc')
    renameSync(join(s.root, 'opencode.jsonc'), outside)
    symlinkSync(outside, join(s.root, 'opencode.jsonc'))
    const before = readFileSync(outside, 'utf8')

    await refused(await send(s, 'PATCH', '/config', { opencode: { model: 'evil/model' } }), 'PATCH /config opencode')
    await refused(await send(s, 'POST', '/plugins', { spec: 'evil-plugin' }), 'POST /plugins')
    await refused(
      await send(s, 'POST', '/mcp', { name: 'evil', config: { type: 'remote', url: 'https://evil.example' } }),
      'POST /mcp',
    )
    assert.is(readFileSync(outside, 'utf8'), before)
    assert.not.ok(existsSync(join(s.root, 'opencode.json')), 'no second config file was created beside the link')
    assert.is((await send(s, 'GET', '/config')).status, 400)
  } finally {
    out.remove()
    await s.dispose()
  }
})

test('a plugin file is not removed or listed through a .opencode/plugins symlink that leads outside', () =>
  withLinkedOut('.opencode/plugins', 'plugins', async (s, outside) => {
    await refused(await send(s, 'DELETE', '/plugins/local-notes'), 'DELETE /plugins/local-notes')
    assert.ok(existsSync(join(outside, 'local-notes.ts')), 'the outside plugin file is still there')

    const list = await send(s, 'GET', '/plugins')
    assert.is(list.status, 400)
    assert.not.ok((await list.text()).includes('local-notes'), 'outside plugin files are not listed')
  }))

test('extension folders linked to a place inside the workspace keep working', async () => {
  const s = await startTestServer()
  try {
    const shared = join(s.root, 'shared/skills')
    mkdirSync(join(s.root, 'shared'))
    linkOut(s, '.opencode/skills', shared)
    const created = await send(s, 'POST', '/skills', { name: 'added', content: '---\ndescription: d\n---\nbody\n' })
    assert.is(created.status, 200)
    assert.ok(existsSync(join(shared, 'added/SKILL.md')))
    const names = (await (await send(s, 'GET', '/skills')).json()).items.map((x: { name: string }) => x.name)
    assert.equal(names, ['added', 'hello-world'])
    assert.is((await send(s, 'DELETE', '/skills/hello-world')).status, 200)
    assert.not.ok(existsSync(join(shared, 'hello-world')))
    assert.ok(existsSync(join(s.root, '.opencode/skills')), 'the link itself stays')
  } finally {
    await s.dispose()
  }
})

test.run()

/**
 * Changes the watcher alone would report, and leftovers of interrupted writes: file-session writes
 * to extension files carry their events in the write, the next start reports edits made while the
 * server was down, and our own stale temp files are swept.
 */
import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { appendFileSync, mkdirSync, symlinkSync, writeFileSync, existsSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { assert, BUN, startChild, suite, tempDir } from '../../../tests/harness.ts'
import { mountPointsUnder, sweepTempFiles } from '../runtime/temp-sweep.ts'
import { fingerprint, HASHED_MAX_BYTES } from './change-tracker.ts'
import { CLIENT_TOKEN, startTestServer, type TestServer } from '../testing/test-kit.ts'

const test = suite('workspace/crash recovery', { timeoutMs: 30_000 })
const ROOT = resolve(import.meta.dirname, '../../..')

const SKILL = '---\nname: from-session\ndescription: Written through a file session.\n---\n\nBody.\n'

interface Reload {
  type: string
  source?: string
  trigger?: { type?: string; name?: string; action?: string; path?: string }
}

const reloads = async (s: TestServer): Promise<Reload[]> =>
  ((await (await s.req(`/workspace/${s.wsId}/events`, { token: CLIENT_TOKEN })).json()).items as Reload[]).filter(
    (e) => e.type === 'reload',
  )

test('a file-session write of a SKILL.md has its skill event when the write is answered, without the watcher', async () => {
  const s = await startTestServer({ watch: false })
  try {
    const session = await (
      await s.req(`/workspace/${s.wsId}/files/sessions`, { method: 'POST', token: CLIENT_TOKEN, json: { write: true } })
    ).json()
    const res = await s.req(`/files/sessions/${session.session.id}/write-batch`, {
      method: 'POST',
      token: CLIENT_TOKEN,
      json: {
        writes: [
          { path: '.opencode/skills/from-session/SKILL.md', contentBase64: Buffer.from(SKILL).toString('base64') },
        ],
      },
    })
    assert.is(res.status, 200)
    const events = await reloads(s)
    const skill = events.find((e) => e.trigger?.name === 'from-session')
    assert.ok(skill, JSON.stringify(events))
    assert.equal([skill!.source, skill!.trigger!.type, skill!.trigger!.action], ['server', 'skill', 'added'])
  } finally {
    await s.dispose()
  }
})

test('an edit made while the server was stopped gets its event at the next start, once', async () => {
  let s = await startTestServer({ watch: false })
  try {
    await s.app.close()
    mkdirSync(join(s.root, '.opencode/skills/while-down'), { recursive: true })
    writeFileSync(join(s.root, '.opencode/skills/while-down/SKILL.md'), SKILL.replace('from-session', 'while-down'))
    s = await s.restart()
    const first = (await reloads(s)).filter((e) => e.trigger?.name === 'while-down')
    assert.equal(
      first.map((e) => [e.source, e.trigger!.action]),
      [['disk', 'added']],
    )
    s = await s.restart()
    const again = (await reloads(s)).filter((e) => e.trigger?.name === 'while-down')
    assert.is(again.length, 1, 'an unchanged workspace emits nothing on the next start')
  } finally {
    await s.dispose()
  }
})

test('a FIFO or a device where a tracked file belongs does not stall a start', async () => {
  // In a child process: if the scan blocked, an in-process server would block this test's clock too.
  const dir = tempDir('svc-fifo-')
  try {
    const ws = join(dir.path, 'ws')
    mkdirSync(join(ws, '.opencode/skills/pipe'), { recursive: true })
    mkdirSync(join(ws, '.opencode/skills/zero'), { recursive: true })
    spawnSync('mkfifo', [join(ws, '.opencode/skills/pipe/SKILL.md')])
    symlinkSync('/dev/zero', join(ws, '.opencode/skills/zero/SKILL.md'))
    const args = [join(ROOT, 'bin/service-server.ts'), '--mode', 'workspace', '--workspace', ws]
    for (let start = 0; start < 2; start++) {
      // The first start writes the snapshot; the second compares with it.
      const child = await startChild(BUN, [...args, '--data-dir', join(dir.path, 'data'), '--port', '0'], {
        env: { HOME: dir.path },
        timeoutMs: 15_000,
      })
      try {
        assert.is((await fetch(`${child.url}/health`)).status, 200)
      } finally {
        assert.is(await child.stop(), 0)
      }
    }
  } finally {
    dir.remove()
  }
})

test('a tracked file over the hashing limit is fingerprinted by its metadata, and every write shows', async () => {
  const dir = tempDir('svc-big-')
  try {
    const small = join(dir.path, 'small.md')
    writeFileSync(small, 'content')
    assert.is(fingerprint(small), createHash('sha256').update('content').digest('hex'))
    const big = join(dir.path, 'big.md')
    writeFileSync(big, 'a'.repeat(HASHED_MAX_BYTES + 1))
    const before = fingerprint(big)
    assert.ok(before?.startsWith('large:'), String(before))
    await new Promise((resolve) => setTimeout(resolve, 20))
    // Same size, other content: only the metadata can tell, and it does.
    writeFileSync(big, 'b'.repeat(HASHED_MAX_BYTES + 1))
    assert.not.equal(fingerprint(big), before)
  } finally {
    dir.remove()
  }
})

test('an edit to a large tracked file made while the server was stopped is reported at the next start', async () => {
  let s = await startTestServer({ watch: false })
  try {
    await s.app.close()
    const big = join(s.root, '.opencode/commands/big.md')
    mkdirSync(join(s.root, '.opencode/commands'), { recursive: true })
    writeFileSync(big, `---\ndescription: big\n---\n${'x'.repeat(HASHED_MAX_BYTES)}`)
    s = await s.restart()
    await s.app.close()
    appendFileSync(big, 'more')
    s = await s.restart()
    const actions = (await reloads(s))
      .filter((e) => e.trigger?.path === '.opencode/commands/big.md')
      .map((e) => e.trigger!.action)
    assert.equal(actions, ['added', 'updated'])
  } finally {
    await s.dispose()
  }
})

test('the start-up sweep removes only our own temp files older than the process', async () => {
  const s = await startTestServer({ watch: false })
  try {
    const stale = ['.svc-tmp-notes.md.0123456789ab', 'deep/.svc-tmp-in-upload.a1b2c3d4e5f6']
    mkdirSync(join(s.root, 'deep'))
    for (const rel of stale) writeFileSync(join(s.root, rel), 'partial')
    writeFileSync(join(s.root, '.svc-tmp-not-ours'), 'user file with our prefix but not our suffix')
    writeFileSync(join(s.root, 'keep.txt'), 'k')
    symlinkSync(join(s.root, 'keep.txt'), join(s.root, '.svc-tmp-link.0123456789ab'))
    mkdirSync(join(s.root, '.git'))
    writeFileSync(join(s.root, '.git/.svc-tmp-x.0123456789ab'), 'not ours to clean')
    // Files made after "start" (a write in flight) are kept.
    assert.equal(await sweepTempFiles(s.root, Date.now() - 60_000), [])
    const removed = await sweepTempFiles(s.root, Date.now() + 1000)
    assert.equal(removed.sort(), [...stale].sort())
    assert.ok(existsSync(join(s.root, '.svc-tmp-not-ours')))
    assert.ok(existsSync(join(s.root, '.svc-tmp-link.0123456789ab')), 'a symlink is not removed')
    assert.ok(existsSync(join(s.root, '.git/.svc-tmp-x.0123456789ab')))
    assert.ok(existsSync(join(s.root, 'keep.txt')))
  } finally {
    await s.dispose()
  }
})

test('the sweep does not enter what is mounted inside the workspace', async () => {
  const dir = tempDir('svc-sweep-')
  try {
    mkdirSync(join(dir.path, 'mounted/deep'), { recursive: true })
    mkdirSync(join(dir.path, 'local'))
    writeFileSync(join(dir.path, 'mounted/deep/.svc-tmp-a.0123456789ab'), 'partial')
    writeFileSync(join(dir.path, 'local/.svc-tmp-b.0123456789ab'), 'partial')
    const removed = await sweepTempFiles(dir.path, Date.now() + 1000, new Set(['mounted']))
    assert.equal(removed, ['local/.svc-tmp-b.0123456789ab'])
    assert.ok(existsSync(join(dir.path, 'mounted/deep/.svc-tmp-a.0123456789ab')))
  } finally {
    dir.remove()
  }
})

test('mount points inside a workspace are read from mountinfo, escapes decoded, siblings left out', () => {
  const mountinfo = [
    '36 25 8:1 / / rw - ext4 /dev/sda1 rw',
    '40 36 0:45 / /home/me/ws rw - ext4 /dev/sda2 rw',
    '41 40 0:46 / /home/me/ws/nfs\\040share rw - nfs4 srv:/export rw',
    '42 40 0:47 / /home/me/ws/a/b rw - tmpfs tmpfs rw',
    '43 36 0:48 / /home/me/ws2 rw - tmpfs tmpfs rw',
    '',
  ].join('\n')
  assert.equal([...mountPointsUnder('/home/me/ws', mountinfo)].sort(), ['a/b', 'nfs share'])
  assert.equal([...mountPointsUnder('/home/me/ws/', mountinfo)].sort(), ['a/b', 'nfs share'])
})

test.run()

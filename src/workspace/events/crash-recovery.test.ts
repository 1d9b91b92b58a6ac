/**
 * Changes the watcher alone would report, and leftovers of interrupted writes: file-session writes
 * to extension files carry their events in the write, the next start reports edits made while the
 * server was down, and our own stale temp files are swept.
 */
import { spawnSync } from 'node:child_process'
import { appendFileSync, mkdirSync, symlinkSync, writeFileSync, existsSync } from 'node:fs'
import { join } from 'node:path'
import { assert, suite } from '../../../tests/harness.ts'
import { sweepTempFiles } from '../runtime/temp-sweep.ts'
import { CLIENT_TOKEN, startTestServer, type TestServer } from '../testing/test-kit.ts'

const test = suite('workspace/crash recovery', { timeoutMs: 30_000 })

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

test('a FIFO or a device where a tracked file belongs does not stall the next start', async () => {
  let s = await startTestServer({ watch: false })
  try {
    await s.app.close()
    mkdirSync(join(s.root, '.opencode/skills/pipe'), { recursive: true })
    const made = spawnSync('mkfifo', [join(s.root, '.opencode/skills/pipe/SKILL.md')])
    mkdirSync(join(s.root, '.opencode/skills/zero'), { recursive: true })
    symlinkSync('/dev/zero', join(s.root, '.opencode/skills/zero/SKILL.md'))
    // The start scans synchronously: a read of either would never return.
    s = await s.restart()
    assert.is((await s.req('/health')).status, 200)
    if (made.status === 0) {
      const names = (await reloads(s)).map((e) => e.trigger?.name)
      assert.not.ok(names.includes('pipe'), 'a FIFO is not a skill file')
      assert.not.ok(names.includes('zero'), 'a device is not a skill file')
    }
  } finally {
    await s.dispose()
  }
})

test('a tracked file too large to hash still has its edits reported', async () => {
  let s = await startTestServer({ watch: false })
  try {
    await s.app.close()
    const big = join(s.root, '.opencode/commands/big.md')
    mkdirSync(join(s.root, '.opencode/commands'), { recursive: true })
    writeFileSync(big, `---\ndescription: big\n---\n${'x'.repeat(9 * 1024 * 1024)}`)
    s = await s.restart()
    const added = (await reloads(s)).filter((e) => e.trigger?.path === '.opencode/commands/big.md')
    assert.equal(
      added.map((e) => e.trigger!.action),
      ['added'],
    )
    await s.app.close()
    appendFileSync(big, 'more')
    s = await s.restart()
    const after = (await reloads(s)).filter((e) => e.trigger?.path === '.opencode/commands/big.md')
    assert.equal(
      after.map((e) => e.trigger!.action),
      ['added', 'updated'],
    )
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

test.run()

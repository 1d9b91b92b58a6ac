import { chmodSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { assert, suite, withTempDir } from '../../tests/harness.ts'
import { ensureDir, exists, isInside, readTextFileIfExists, TEMP_PREFIX, walk, writeFileAtomic } from './fs.ts'

const fs = suite('storage/fs')

fs('writeFileAtomic keeps the permission bits of the file it replaces unless given a mode', async () => {
  await withTempDir(async (dir) => {
    const secret = join(dir, 'opencode.json')
    writeFileSync(secret, '{}', { mode: 0o600 })
    chmodSync(secret, 0o600)
    await writeFileAtomic(secret, '{"a":1}')
    assert.is(statSync(secret).mode & 0o777, 0o600)
    const script = join(dir, 'run.sh')
    writeFileSync(script, 'echo 1')
    chmodSync(script, 0o755)
    await writeFileAtomic(script, 'echo 2')
    assert.is(statSync(script).mode & 0o777, 0o755)
    await writeFileAtomic(script, 'echo 3', { mode: 0o640 })
    assert.is(statSync(script).mode & 0o777, 0o640, 'an explicit mode wins')
  })
})

fs('writeFileAtomic replaces content whole and leaves no temp file behind', async () => {
  await withTempDir(async (dir) => {
    const file = join(dir, 'a.txt')
    await writeFileAtomic(file, 'old')
    await writeFileAtomic(file, 'new content', { mode: 0o600 })
    assert.is(readFileSync(file, 'utf8'), 'new content')
    assert.is(statSync(file).mode & 0o777, 0o600)
    assert.equal(readdirSync(dir), ['a.txt'])
  })
})

fs('writeFileAtomic streams an async iterable and cleans up when the source fails', async () => {
  await withTempDir(async (dir) => {
    const file = join(dir, 'b.bin')
    async function* chunks() {
      yield new Uint8Array([1, 2])
      yield new Uint8Array([3])
    }
    await writeFileAtomic(file, chunks())
    assert.equal([...readFileSync(file)], [1, 2, 3])
    async function* failing() {
      yield new Uint8Array([9])
      throw new Error('source broke')
    }
    let threw = false
    try {
      await writeFileAtomic(file, failing())
    } catch {
      threw = true
    }
    assert.ok(threw)
    assert.equal([...readFileSync(file)], [1, 2, 3], 'old content kept')
    assert.not.ok(readdirSync(dir).some((n) => n.startsWith(TEMP_PREFIX)))
  })
})

fs('walk yields sorted entries, skips named dirs, reports symlinks without following them', async () => {
  await withTempDir(async (dir) => {
    mkdirSync(join(dir, 'b/node_modules'), { recursive: true })
    mkdirSync(join(dir, 'a'))
    writeFileSync(join(dir, 'a/1.md'), '')
    writeFileSync(join(dir, 'b/2.ts'), '')
    writeFileSync(join(dir, 'b/node_modules/x.ts'), '')
    mkdirSync(join(dir, 'outside'))
    symlinkSync(join(dir, 'outside'), join(dir, 'b/link'))
    const seen: string[] = []
    for await (const e of walk(dir, { skipDirs: ['node_modules', 'outside'], includeDirs: false }))
      seen.push(`${e.path.slice(dir.length + 1)}${e.isSymlink ? '@' : ''}`)
    assert.equal(seen, ['a/1.md', 'b/2.ts', 'b/link@'])
  })
})

fs('exists, ensureDir and readTextFileIfExists behave like their std counterparts', async () => {
  await withTempDir(async (dir) => {
    await ensureDir(join(dir, 'x/y'))
    assert.ok(await exists(join(dir, 'x/y'), { isDirectory: true }))
    assert.not.ok(await exists(join(dir, 'x/y'), { isFile: true }))
    assert.not.ok(await exists(join(dir, 'missing')))
    assert.is(await readTextFileIfExists(join(dir, 'missing')), null)
    writeFileSync(join(dir, 'f'), 'hi')
    assert.is(await readTextFileIfExists(join(dir, 'f')), 'hi')
  })
})

fs('isInside compares resolved paths without being fooled by name prefixes', () => {
  assert.ok(isInside('/w/root', '/w/root'))
  assert.ok(isInside('/w/root', '/w/root/a/b'))
  assert.ok(isInside('/w/root', '/w/root/..hidden'))
  assert.not.ok(isInside('/w/root', '/w/root2/a'))
  assert.not.ok(isInside('/w/root', '/w'))
  assert.not.ok(isInside('/w/root', '/etc/passwd'))
})

fs.run()

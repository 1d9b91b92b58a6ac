import { lstatSync, writeFileSync, type Stats } from 'node:fs'
import { join } from 'node:path'
import { assert, suite, tempDir } from '../../../tests/harness.ts'
import { ENTRY_OVERHEAD, FileContentCache, SETTLE_MS } from './file-content-cache.ts'

const test = suite('workspace/files content cache')
const later = () => Date.now() + SETTLE_MS + 1_000
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

test('serves an entry only while an lstat shows the file unchanged', async () => {
  const dir = tempDir('svc-fcc-')
  try {
    const file = join(dir.path, 'a.txt')
    writeFileSync(file, 'first')
    const cache = new FileContentCache(1 << 20, later)
    cache.set(file, lstatSync(file), 'Zmlyc3Q=')
    assert.is(cache.get(file, lstatSync(file)), 'Zmlyc3Q=')
    const mountedOver: Stats = Object.assign(lstatSync(file), { dev: lstatSync(file).dev + 1 })
    assert.is(cache.get(file, mountedOver), undefined, 'same inode on another device: a miss')
    cache.set(file, lstatSync(file), 'Zmlyc3Q=')
    // Linux stamps files with a coarse clock; wait past a tick so the rewrite gets a new ctime.
    await pause(30)
    writeFileSync(file, 'other')
    assert.is(cache.get(file, lstatSync(file)), undefined, 'same size, new content: a miss')
    assert.is(cache.size.entries, 0, 'the stale entry is dropped')
  } finally {
    dir.remove()
  }
})

test('does not cache a file changed within the settle window', () => {
  const dir = tempDir('svc-fcc-')
  try {
    const file = join(dir.path, 'fresh.txt')
    writeFileSync(file, 'x')
    const cache = new FileContentCache(1 << 20)
    cache.set(file, lstatSync(file), 'eA==')
    assert.is(cache.get(file, lstatSync(file)), undefined)
    assert.is(cache.size.entries, 0)
  } finally {
    dir.remove()
  }
})

test('stays within its bound by dropping the least recently used entries', () => {
  const dir = tempDir('svc-fcc-')
  try {
    const cache = new FileContentCache(16_000, later)
    const files = ['a', 'b', 'c'].map((name) => {
      const file = join(dir.path, name)
      writeFileSync(file, name)
      return file
    })
    const text = 'x'.repeat(1_000) // with its key and overhead, under an eighth of the bound
    cache.set(files[0]!, lstatSync(files[0]!), text)
    cache.set(files[1]!, lstatSync(files[1]!), text.repeat(2))
    assert.is(cache.size.entries, 1, 'over an eighth of the bound: not cached')
    for (let i = 0; i < 16; i++) {
      const file = join(dir.path, `n${i}`)
      writeFileSync(file, String(i))
      cache.set(file, lstatSync(file), text)
    }
    assert.ok(cache.size.chars <= 16_000)
    assert.ok(cache.size.entries >= 8, 'the bound holds several entries')
    assert.is(cache.get(files[0]!, lstatSync(files[0]!)), undefined, 'the oldest entry went first')
  } finally {
    dir.remove()
  }
})

test('charges every entry its key and a fixed overhead, so empty files cannot fill memory', () => {
  const dir = tempDir('svc-fcc-')
  try {
    const file = join(dir.path, 'empty')
    writeFileSync(file, '')
    const st = lstatSync(file)
    const bound = 64 * 1024
    const cache = new FileContentCache(bound, later)
    for (let i = 0; i < 10_000; i++) cache.set(`${file}-${'k'.repeat(100)}-${i}`, st, '')
    assert.ok(cache.size.chars <= bound)
    assert.ok(cache.size.entries <= bound / ENTRY_OVERHEAD, `${cache.size.entries} entries of empty content`)
    assert.ok(cache.size.entries > 0)

    const off = new FileContentCache(0, later)
    assert.is(off.enabled, false, '0 turns the cache off')
    off.set(file, st, '')
    assert.is(off.size.entries, 0, 'a disabled cache keeps nothing, not even empty files')
  } finally {
    dir.remove()
  }
})

test.run()

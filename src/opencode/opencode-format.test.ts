import { strToU8, zipSync } from 'fflate'
import { assert, suite } from '../../tests/harness.ts'
import type { ApiError } from '../core/errors.ts'
import { FrontmatterError, parseFrontmatter, renderFrontmatter } from './frontmatter.ts'
import { isCommandName, isSkillName } from './names.ts'
import {
  bundleHash,
  DEFAULT_SKILL_LIMITS,
  decodeWireFiles,
  encodeWireFile,
  normalizeSkillPath,
} from './skill-bundle.ts'
import { DEFAULT_ZIP_LIMITS, readSkillZip } from './skill-zip.ts'

const test = suite('opencode/format', { timeoutMs: 60_000 })

const LIMITS = { ...DEFAULT_SKILL_LIMITS, ...DEFAULT_ZIP_LIMITS }
const SKILL_MD = '---\nname: pdf\ndescription: Reads PDFs\n---\n\nUse the script.\n'

/** A Unix zip entry with mode bits (fflate writes them to the central directory). */
const unix = (data: Uint8Array, mode: number) => [data, { os: 3, attrs: (mode << 16) >>> 0 }] as const

function code(fn: () => unknown): string | undefined {
  try {
    fn()
  } catch (error) {
    return (error as ApiError).code
  }
  return undefined
}

test('a SKILL.md as OpenCode writes it, with block scalars, parses on both surfaces alike', async () => {
  // A real-world shape: folded and literal block scalars, a nested map and a flow list.
  const doc = await parseFrontmatter(
    '\uFEFF---\r\nname: pdf\r\ndescription: >\r\n  Extracts text\r\n  from PDFs.\r\nlicense: |\r\n  MIT\r\n  see LICENSE\r\nmetadata:\r\n  tags: [a, b]\r\n---\r\n\r\nBody\r\n',
  )
  assert.equal(doc.data, {
    name: 'pdf',
    description: 'Extracts text from PDFs.\n',
    license: 'MIT\nsee LICENSE\n',
    metadata: { tags: ['a', 'b'] },
  })
  assert.is(doc.body, 'Body\n')
  assert.ok(doc.hasFrontmatter)
  const again = await parseFrontmatter(await renderFrontmatter(doc.data, doc.body))
  assert.equal(again.data, doc.data)
  assert.is(again.body, doc.body)
  assert.is((await parseFrontmatter('plain text')).hasFrontmatter, false)
})

test('broken frontmatter is reported with the line of the file it broke on', async () => {
  for (const [bad, line] of [
    ['---\nname: x\n', 1],
    ['---\nname: x\nname: y\n---\n', 2],
    ['---\n- a list\n---\n', 2],
    ['---\nname: "open\n---\n', 2],
  ] as const) {
    let error: unknown
    try {
      await parseFrontmatter(bad)
    } catch (e) {
      error = e
    }
    assert.instance(error, FrontmatterError, JSON.stringify(bad))
    assert.is((error as FrontmatterError).line, line, JSON.stringify(bad))
  }
})

test('skill and command names follow one rule each', () => {
  assert.ok(isSkillName('pdf-tools'))
  for (const bad of ['PDF', 'a--b', '-a', 'a-', '', 'a'.repeat(65), 'a_b']) assert.not.ok(isSkillName(bad), bad)
  assert.ok(isCommandName('Run_it-2'))
  assert.not.ok(isCommandName('a b'))
})

test('skill paths are normalized and kept inside the folder', () => {
  assert.is(normalizeSkillPath('./scripts//run.sh'), 'scripts/run.sh')
  for (const bad of [
    '../x',
    'a/../../x',
    '/etc/passwd',
    'C:/x',
    'a\\b',
    '.git/config',
    'x/node_modules/y',
    '.DS_Store',
    'SKILL.md',
    'a\u0000b',
  ])
    assert.is(
      code(() => normalizeSkillPath(bad)),
      'invalid_skill_file_path',
      bad,
    )
})

test('wire files decode byte-exact, and text or binary come back in the matching field', () => {
  const binary = new Uint8Array([0, 255, 254, 1, 2, 3, 0x80])
  const files = decodeWireFiles(
    10,
    [
      { path: 'scripts/run.sh', contentBase64: Buffer.from('#!/bin/sh\n').toString('base64'), executable: true },
      { path: 'assets/x.bin', contentBase64: Buffer.from(binary).toString('base64') },
      { path: 'references/guide.md', content: '# Guide\n' },
    ],
    DEFAULT_SKILL_LIMITS,
  )
  assert.equal(
    files.map((f) => f.path),
    ['assets/x.bin', 'references/guide.md', 'scripts/run.sh'],
  )
  const out = files.map(encodeWireFile)
  assert.equal(Buffer.from(out[0]!.content, 'base64'), Buffer.from(binary))
  assert.is(out[0]!.encoding, 'base64')
  assert.is(out[0]!.contentBase64, out[0]!.content, 'the deprecated field still carries the bytes')
  assert.is(out[1]!.content, '# Guide\n')
  assert.is(out[1]!.encoding, 'utf8')
  assert.is(out[1]!.contentBase64, undefined)
  assert.is(out[2]!.executable, true)
  assert.is(out[1]!.executable, false)
  // What the server returns is accepted back unchanged and hashes the same.
  const back = decodeWireFiles(10, out, DEFAULT_SKILL_LIMITS)
  assert.is(bundleHash(SKILL_MD, back), bundleHash(SKILL_MD, files))
  assert.is.not(
    bundleHash(
      SKILL_MD,
      back.map((f) => ({ ...f, executable: !f.executable })),
    ),
    bundleHash(SKILL_MD, files),
  )
})

test('limits on files, bytes per file and bytes per skill name the limit and the path', () => {
  const limits = { maxFiles: 3, maxFileBytes: 8, maxBytes: 20 }
  const file = (path: string, content: string) => ({ path, content })
  let error = (() => {
    try {
      decodeWireFiles(1, [file('a', '1'), file('b', '2'), file('c', '3')], limits)
    } catch (e) {
      return e as ApiError
    }
  })()
  assert.is(error?.status, 422)
  assert.is(error?.code, 'skill_too_many_files')
  assert.equal(error?.details, { limit: 'maxFiles', max: 3, count: 4 })
  error = (() => {
    try {
      decodeWireFiles(1, [file('big/one.txt', '123456789')], limits)
    } catch (e) {
      return e as ApiError
    }
  })()
  assert.is(error?.status, 413)
  assert.is(error?.code, 'skill_file_too_large')
  assert.equal(error?.details, { limit: 'maxFileBytes', max: 8, path: 'big/one.txt', size: 9 })
  assert.is(
    code(() => decodeWireFiles(5, [file('a', '12345678'), file('b', '12345678')], limits)),
    'skill_too_large',
  )
  assert.is(
    code(() => decodeWireFiles(1, [file('a', 'x'), file('./a', 'y')], limits)),
    'skill_file_duplicate',
  )
  assert.is(
    code(() => decodeWireFiles(1, [{ path: 'a', contentBase64: 'not base64!' }], limits)),
    'invalid_skill_file',
  )
  assert.is(
    code(() => decodeWireFiles(1, [{ path: 'a', content: 'x', sha256: '0'.repeat(64) }], limits)),
    'skill_file_checksum_mismatch',
  )
})

test('a zip of two skill folders reads with executable bits, and hostile archives are refused', () => {
  const zip = zipSync({
    'pdf/SKILL.md': strToU8(SKILL_MD),
    'pdf/scripts/run.sh': unix(strToU8('#!/bin/sh\necho\n'), 0o100755) as never,
    'pdf/.DS_Store': strToU8('litter'),
    'other/SKILL.md': strToU8('---\nname: other\ndescription: d\n---\nx\n'),
  })
  const skills = readSkillZip(zip, LIMITS)
  assert.equal(
    skills.map((s) => [s.folderName, s.files.map((f) => [f.path, f.executable])]),
    [
      ['pdf', [['scripts/run.sh', true]]],
      ['other', []],
    ],
  )
  const refused = (entries: Record<string, unknown>, limits = LIMITS) =>
    code(() => readSkillZip(zipSync(entries as never), limits))
  assert.is(
    refused({ 'a/SKILL.md': strToU8('x'), 'a/link': unix(strToU8('../../etc'), 0o120777) }),
    'zip_entry_symlink',
  )
  assert.is(refused({ 'a/SKILL.md': strToU8('x'), '../evil': strToU8('x') }), 'zip_entry_escapes')
  assert.is(refused({ 'a/SKILL.md': strToU8('x'), '/abs': strToU8('x') }), 'zip_entry_escapes')
  assert.is(refused({ 'a/x': strToU8('x') }), 'zip_no_skill')
  assert.is(refused({ 'a/SKILL.md': strToU8('x'), 'stray.txt': strToU8('x') }), 'zip_entry_outside_skill')
  assert.is(refused({ 'a/SKILL.md': strToU8('x'), 'a/b/SKILL.md': strToU8('x') }), 'zip_nested_skill')
  // Duplicate names: zipSync takes an object, so build two archives' entries under one name by hand.
  const dup = zipSync({ 'a/SKILL.md': strToU8('x'), 'a/one': strToU8('1') })
  const patched = Buffer.from(dup)
  patched.write('a/SKILL.md'.slice(0, 5), patched.indexOf('a/one', patched.indexOf('PK\x01\x02')), 'latin1')
  assert.ok(['zip_duplicate_entry', 'invalid_zip'].includes(code(() => readSkillZip(patched, LIMITS))!))
})

test('zip bombs are refused quickly without allocating past the limit', () => {
  const limits = { ...LIMITS, maxFileBytes: 1024 * 1024, maxInflatedBytes: 2 * 1024 * 1024 }
  // About 8 KB of deflate that inflates to 8 MiB: past the per-file limit 8 times over.
  const bomb = zipSync({ 'b/SKILL.md': strToU8('x'), 'b/bomb.bin': new Uint8Array(8 * 1024 * 1024) }, { level: 9 })
  assert.ok(bomb.byteLength < 64 * 1024, `bomb is ${bomb.byteLength} bytes`)
  const start = performance.now()
  const error = (() => {
    try {
      readSkillZip(bomb, limits)
    } catch (e) {
      return e as ApiError
    }
  })()
  assert.is(error?.code, 'skill_file_too_large')
  assert.is(error?.status, 413)
  // Stopped within one 4 KiB step of compressed input (≤ ~4 MiB of output) past the 1 MiB limit.
  assert.ok(((error?.details as { size?: number } | undefined)?.size ?? 0) < 6 * 1024 * 1024)
  // Many small files: the total cap trips, not the per-file one.
  const entries: Record<string, Uint8Array> = { 'c/SKILL.md': strToU8('x') }
  for (let i = 0; i < 4; i++) entries[`c/f${i}.bin`] = new Uint8Array(900 * 1024)
  assert.is(
    code(() => readSkillZip(zipSync(entries, { level: 9 }), limits)),
    'zip_bomb',
  )
  // 100k tiny entries: refused from the central directory before anything is inflated.
  const many: Record<string, Uint8Array> = { 'd/SKILL.md': strToU8('x') }
  for (let i = 0; i < 100_000; i++) many[`d/${i}`] = new Uint8Array(0)
  const wide = zipSync(many)
  const t = performance.now()
  assert.is(
    code(() => readSkillZip(wide, LIMITS)),
    'zip_too_many_entries',
  )
  assert.ok(performance.now() - t < 2000, 'refused without inflating')
  assert.ok(performance.now() - start < 20_000)
})

test('a file is accepted as {content, encoding} (the returned shape) and in the deprecated forms; mixed forms are refused', () => {
  const bytes = new Uint8Array([0, 1, 2, 250])
  const b64 = Buffer.from(bytes).toString('base64')
  const forms = [
    { path: 'a.bin', content: b64, encoding: 'base64' as const },
    { path: 'a.bin', contentBase64: b64 },
    { path: 'a.bin', content: b64, encoding: 'base64' as const, contentBase64: b64 },
  ]
  for (const form of forms) assert.equal(decodeWireFiles(10, [form], DEFAULT_SKILL_LIMITS)[0]!.bytes, bytes)
  const text = decodeWireFiles(10, [{ path: 't.md', content: 'hi', encoding: 'utf8' }], DEFAULT_SKILL_LIMITS)
  assert.equal(Buffer.from(text[0]!.bytes).toString(), 'hi')
  for (const bad of [
    { path: 'a.bin', content: 'hi', contentBase64: b64 },
    { path: 'a.bin', content: b64, encoding: 'base64' as const, contentBase64: 'AAAA' },
    { path: 'a.bin', contentBase64: b64, encoding: 'utf8' as const },
    { path: 'a.bin', content: '%%%', encoding: 'base64' as const },
  ]) {
    let code = ''
    try {
      decodeWireFiles(10, [bad], DEFAULT_SKILL_LIMITS)
    } catch (error) {
      code = (error as ApiError).code
    }
    assert.is(code, 'invalid_skill_file', JSON.stringify(bad))
  }
})

test.run()

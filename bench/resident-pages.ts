/**
 * Which parts of an executable a running process keeps resident: its mapped pages that are
 * present, grouped by ELF section (`.text` is the runtime's native code, `.rodata` its constants,
 * `.bun` our embedded bytecode and sources).
 *
 * Usage: bun bench/resident-pages.ts <pid> [--out pages.txt] [--compare a.txt b.txt ...]
 *
 * Why: most of the workspace server's idle RSS is file-backed (33 of 40 MB), and VmRSS does not
 * say which code it is. Two processes of binaries built from the same Bun map its runtime at the
 * same file offsets, so their page sets can be compared directly: `--out` saves this process's
 * set, `--compare` prints how much of its `.text` each saved set also touches, which is how the
 * start-up phases in bench/results/history.md were attributed (against the module floor and the work floor).
 * Linux only; reading another process's pagemap needs root (or CAP_SYS_ADMIN).
 */
import { spawnSync } from 'node:child_process'
import { closeSync, openSync, readFileSync, readlinkSync, readSync, writeFileSync } from 'node:fs'

const PAGE = 4096
const args = process.argv.slice(2)
const pid = Number(args[0])
if (!Number.isInteger(pid) || pid <= 0) {
  console.error('usage: bun bench/resident-pages.ts <pid> [--out pages.txt] [--compare a.txt b.txt ...]')
  process.exit(2)
}
const option = (name: string) => {
  const i = args.indexOf(name)
  return i >= 0 ? args[i + 1] : undefined
}
const compare = args.includes('--compare') ? args.slice(args.indexOf('--compare') + 1) : []

const binary = readlinkSync(`/proc/${pid}/exe`)

/** Section name and page range [first, end) in the file, from `readelf -S`. */
function sections(path: string): Array<{ name: string; first: number; end: number }> {
  const out = spawnSync('readelf', ['-S', '-W', path], { encoding: 'utf8' }).stdout ?? ''
  const found = []
  for (const line of out.split('\n')) {
    const m = /^\s*\[\s*\d+\]\s+(\S+)\s+\S+\s+[0-9a-f]+\s+([0-9a-f]+)\s+([0-9a-f]+)/.exec(line)
    if (!m) continue
    const offset = Number.parseInt(m[2]!, 16)
    const size = Number.parseInt(m[3]!, 16)
    if (size > 0) found.push({ name: m[1]!, first: Math.floor(offset / PAGE), end: Math.ceil((offset + size) / PAGE) })
  }
  return found
}

/** File page indices of `binary` that are present in the process's mappings of it. */
function residentPages(): Set<number> {
  const pages = new Set<number>()
  const pagemap = openSync(`/proc/${pid}/pagemap`, 'r')
  try {
    for (const line of readFileSync(`/proc/${pid}/maps`, 'utf8').split('\n')) {
      const fields = line.trim().split(/\s+/)
      if (fields.length < 6 || fields[5] !== binary) continue
      const [start, end] = fields[0]!.split('-').map((x) => Number.parseInt(x, 16)) as [number, number]
      const filePage = Number.parseInt(fields[2]!, 16) / PAGE
      const count = (end - start) / PAGE
      const entries = Buffer.alloc(count * 8)
      readSync(pagemap, entries, 0, entries.length, (start / PAGE) * 8)
      for (let i = 0; i < count; i++) {
        // Bit 63: page present in RAM.
        if (entries.readBigUInt64LE(i * 8) >> 63n) pages.add(filePage + i)
      }
    }
  } finally {
    closeSync(pagemap)
  }
  return pages
}

const mb = (pages: number) => `${((pages * PAGE) / 1024 / 1024).toFixed(2)} MB`
const pages = residentPages()
const bySection = new Map<string, number>()
const layout = sections(binary)
for (const page of pages) {
  const name = layout.find((s) => page >= s.first && page < s.end)?.name ?? '(other)'
  bySection.set(name, (bySection.get(name) ?? 0) + 1)
}
console.log(`${binary}: ${mb(pages.size)} resident`)
for (const [name, count] of [...bySection].sort((a, b) => b[1] - a[1]))
  if (count * PAGE >= 16 * 1024) console.log(`  ${name.padEnd(22)} ${mb(count)}`)

const out = option('--out')
if (out) writeFileSync(out, [...pages].sort((a, b) => a - b).join('\n'))

const text = layout.find((s) => s.name === '.text')
if (text && compare.length) {
  const inText = (set: Set<number>) => new Set([...set].filter((p) => p >= text.first && p < text.end))
  const mine = inText(pages)
  const union = new Set<number>()
  for (const file of compare) {
    const other = inText(new Set(readFileSync(file, 'utf8').split('\n').filter(Boolean).map(Number)))
    for (const p of other) union.add(p)
    const shared = [...mine].filter((p) => other.has(p)).length
    console.log(`  .text shared with ${file}: ${mb(shared)} of ${mb(mine.size)} (it has ${mb(other.size)})`)
  }
  const alone = [...mine].filter((p) => !union.has(p)).length
  console.log(`  .text in none of them: ${mb(alone)}`)
}

/**
 * `npm run release`: builds the executable for every target (`build.ts`, `TARGETS`) and writes,
 * per target, an archive holding the binary, LICENSE and README.md (`.tar.gz`; `.zip` for
 * Windows), plus `SHA256SUMS` over the archives, in `dist/release/`. `install.sh` picks and
 * verifies an archive from there.
 *
 *   bun release.ts [--target <name>]... [--out <dir>] [--prebuilt <binary>]
 *
 * Cross targets need the Bun runtime of that platform, which `bun build --compile` downloads the
 * first time (about 100 MB each, cached afterwards). A target that cannot be built (offline, say)
 * is reported by name with the reason, the others are still packaged and summed, and the exit
 * code is 1. `--prebuilt` packages an existing binary of this platform instead of building it
 * (the tests package the binary they already built).
 *
 * Archives are reproducible for a given binary: fixed order, owner 0, modification time from
 * SOURCE_DATE_EPOCH or the build time.
 * @module
 */
import { createHash } from 'node:crypto'
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { gzipSync, zipSync } from 'fflate'
import { build, TARGETS } from './build.ts'
import pkg from './package.json' with { type: 'json' }

/** Our name for the platform this runs on, when it is a release target. */
export function hostTarget(): string | undefined {
  const os = { linux: 'linux', darwin: 'darwin', win32: 'windows' }[process.platform as string]
  const cpu = { x64: 'x64', arm64: 'arm64' }[process.arch as string]
  const name = os && cpu ? `${os}-${cpu}` : undefined
  return name && name in TARGETS ? name : undefined
}

/** The archive file name of `target` for `version`. */
export function archiveName(version: string, target: string): string {
  return `service-server-${version}-${target}${target.startsWith('windows') ? '.zip' : '.tar.gz'}`
}

interface Entry {
  name: string
  bytes: Uint8Array
  mode: number
}

/** A ustar header field: text, NUL-padded to `size`. */
function field(header: Uint8Array, offset: number, size: number, text: string): void {
  const bytes = new TextEncoder().encode(text)
  if (bytes.length > size) throw new Error(`tar field too long: ${text}`)
  header.set(bytes, offset)
}

function octal(value: number, size: number): string {
  return `${value.toString(8).padStart(size - 1, '0')}\u0000`
}

/** A POSIX ustar archive of regular files (names under 100 bytes), ending in two zero blocks. */
export function tarArchive(entries: Entry[], mtimeSeconds: number): Uint8Array {
  const blocks: Uint8Array[] = []
  for (const entry of entries) {
    const header = new Uint8Array(512)
    field(header, 0, 100, entry.name)
    field(header, 100, 8, octal(entry.mode, 8))
    field(header, 108, 8, octal(0, 8))
    field(header, 116, 8, octal(0, 8))
    field(header, 124, 12, octal(entry.bytes.length, 12))
    field(header, 136, 12, octal(mtimeSeconds, 12))
    field(header, 148, 8, '        ')
    field(header, 156, 1, '0')
    field(header, 257, 6, 'ustar\u0000')
    field(header, 263, 2, '00')
    field(header, 265, 32, 'root')
    field(header, 297, 32, 'root')
    let sum = 0
    for (const byte of header) sum += byte
    field(header, 148, 8, `${sum.toString(8).padStart(6, '0')}\u0000 `)
    blocks.push(header, entry.bytes)
    const pad = (512 - (entry.bytes.length % 512)) % 512
    if (pad) blocks.push(new Uint8Array(pad))
  }
  blocks.push(new Uint8Array(1024))
  const out = new Uint8Array(blocks.reduce((n, b) => n + b.length, 0))
  let at = 0
  for (const block of blocks) {
    out.set(block, at)
    at += block.length
  }
  return out
}

/** Writes the archive of `target` holding `binary`, LICENSE and README.md; returns its path. */
export function writeArchive(options: {
  root: string
  out: string
  version: string
  target: string
  binary: string
  mtimeSeconds: number
}): string {
  const { root, out, version, target, binary, mtimeSeconds } = options
  const windows = target.startsWith('windows')
  const folder = `service-server-${version}-${target}`
  const entries: Entry[] = [
    { name: `${folder}/service-server${windows ? '.exe' : ''}`, bytes: readFileSync(binary), mode: 0o755 },
    { name: `${folder}/LICENSE`, bytes: readFileSync(join(root, 'LICENSE')), mode: 0o644 },
    { name: `${folder}/README.md`, bytes: readFileSync(join(root, 'README.md')), mode: 0o644 },
  ]
  const path = join(out, archiveName(version, target))
  if (windows) {
    const mtime = new Date(mtimeSeconds * 1000)
    const files = Object.fromEntries(
      entries.map((e) => [e.name, [e.bytes, { mtime, level: 9, attrs: (e.mode << 16) >>> 0 }] as const]),
    )
    writeFileSync(path, zipSync(files as never))
  } else {
    writeFileSync(path, gzipSync(tarArchive(entries, mtimeSeconds), { level: 9, mtime: 0 }))
  }
  return path
}

/** `SHA256SUMS` in the format `sha256sum -c` reads: `<hex>  <file name>`. */
export function writeChecksums(out: string, archives: string[]): string {
  const lines = archives
    .map((path) => `${createHash('sha256').update(readFileSync(path)).digest('hex')}  ${path.split('/').pop()}`)
    .sort((a, b) => a.slice(66).localeCompare(b.slice(66)))
  const path = join(out, 'SHA256SUMS')
  writeFileSync(path, `${lines.join('\n')}\n`)
  return path
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      target: { type: 'string', multiple: true },
      out: { type: 'string' },
      prebuilt: { type: 'string' },
    },
    strict: true,
  })
  const root = resolve(import.meta.dirname ?? '.')
  const out = resolve(values.out ?? join(root, 'dist', 'release'))
  const targets = values.target ?? Object.keys(TARGETS)
  for (const target of targets) {
    if (!(target in TARGETS)) {
      console.error(`unknown target ${target}; targets: ${Object.keys(TARGETS).join(', ')}`)
      return 2
    }
  }
  const host = hostTarget()
  if (values.prebuilt && (targets.length !== 1 || targets[0] !== host)) {
    console.error(
      `--prebuilt packages a binary of this platform: pass --target ${host ?? '(none: not a target)'} alone`,
    )
    return 2
  }
  mkdirSync(out, { recursive: true })
  const stage = join(out, '.stage')
  rmSync(stage, { recursive: true, force: true })
  mkdirSync(stage, { recursive: true })
  const epoch = Number(process.env.SOURCE_DATE_EPOCH)
  const mtimeSeconds = Number.isFinite(epoch) && epoch > 0 ? epoch : Math.floor(Date.now() / 1000)
  const archives: string[] = []
  const failed: string[] = []
  try {
    for (const target of targets) {
      const binary = join(stage, target, `service-server${target.startsWith('windows') ? '.exe' : ''}`)
      mkdirSync(join(stage, target), { recursive: true })
      if (values.prebuilt) {
        copyFileSync(resolve(values.prebuilt), binary)
        chmodSync(binary, 0o755)
      } else if (!build(binary, TARGETS[target], true, false) || !existsSync(binary)) {
        failed.push(target)
        console.error(
          `release: ${target} was not built. Cross targets need that platform's Bun runtime, which bun build --compile downloads on first use (network access to npm's registry); the other targets are packaged.`,
        )
        continue
      }
      const archive = writeArchive({ root, out, version: pkg.version, target, binary, mtimeSeconds })
      archives.push(archive)
      console.log(`packed ${archive} (${(statSync(archive).size / 1e6).toFixed(1)} MB)`)
    }
  } finally {
    rmSync(stage, { recursive: true, force: true })
  }
  if (archives.length === 0) {
    console.error('release: nothing was built')
    return 1
  }
  const sums = writeChecksums(out, archives)
  console.log(`wrote ${sums} (${archives.length} archives)`)
  if (failed.length) {
    console.error(`release: NOT built: ${failed.join(', ')}`)
    return 1
  }
  return 0
}

if (import.meta.main) process.exit(await main())

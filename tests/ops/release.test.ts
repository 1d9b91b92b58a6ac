/**
 * Release artifacts: `release.ts` packages this platform's binary (the one the run already built)
 * with LICENSE and README into the archive `install.sh` looks for, plus SHA256SUMS; `install.sh`,
 * fetching from a loopback HTTP server, installs it when the checksum matches and refuses a
 * tampered archive or a missing checksum, installing nothing. `--version` carries the version,
 * commit and build date, and the OpenAPI documents name the same version and the licence.
 *
 * Cross targets are not built here (each needs its platform's Bun runtime, downloaded on first
 * use); `npm run release` builds all five where it can and says which it could not.
 */
import { spawnSync } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import { join, resolve } from 'node:path'
import pkg from '../../package.json' with { type: 'json' }
import { archiveName, hostTarget } from '../../release.ts'
import { assert, compiledBinary, runCommand, startChild, suite, tempDir, BUN } from '../harness.ts'

const root = resolve(import.meta.dirname, '../..')
const test = suite('ops/release', { timeoutMs: 180_000 })
const dir = tempDir('svc-release-')
const target = hostTarget()
let binary = ''

test.before(async () => {
  binary = await compiledBinary()
})
test.after(() => dir.remove())

/** Serves `folder` on loopback (GET only, no listing); resolves with its base URL. */
async function serveFolder(folder: string): Promise<{ url: string; server: Server }> {
  const server = createServer((request, response) => {
    const name = decodeURIComponent((request.url ?? '/').slice(1))
    const path = join(folder, name)
    if (name.includes('/') || !existsSync(path)) {
      response.writeHead(404).end()
      return
    }
    response.writeHead(200, { 'content-type': 'application/octet-stream' }).end(readFileSync(path))
  })
  await new Promise<void>((ready) => server.listen(0, '127.0.0.1', ready))
  const { port } = server.address() as { port: number }
  return { url: `http://127.0.0.1:${port}`, server }
}

/** Runs install.sh (asynchronously: the loopback server it downloads from is in this process). */
function install(from: string, prefix: string) {
  return runCommand('sh', [join(root, 'install.sh'), '--from', from, '--prefix', prefix], {
    env: { HOME: dir.path },
  })
}

if (!target) {
  console.log(`ops/release skipped: ${process.platform}-${process.arch} is not a release target`)
} else {
  test('release.ts packs the binary, LICENSE and README, and SHA256SUMS verifies with sha256sum', async () => {
    const out = join(dir.path, 'release')
    const result = await runCommand(BUN, ['release.ts', '--target', target, '--prebuilt', binary, '--out', out], {
      cwd: root,
    })
    assert.is(result.code, 0, result.stderr)
    const name = archiveName(pkg.version, target)
    const sums = readFileSync(join(out, 'SHA256SUMS'), 'utf8')
    assert.match(sums, new RegExp(`^[0-9a-f]{64}  ${name.replace(/\./g, '\\.')}\n$`))
    const check = spawnSync('sha256sum', ['-c', 'SHA256SUMS'], { cwd: out, encoding: 'utf8' })
    assert.is(check.status, 0, check.stderr)
    const listing = spawnSync('tar', ['-tzvf', join(out, name)], { encoding: 'utf8' })
    assert.is(listing.status, 0, listing.stderr)
    const folder = `service-server-${pkg.version}-${target}`
    assert.match(listing.stdout, new RegExp(`^-rwxr-xr-x root/root .* ${folder}/service-server$`, 'm'))
    assert.match(listing.stdout, new RegExp(`${folder}/LICENSE$`, 'm'))
    assert.match(listing.stdout, new RegExp(`${folder}/README.md$`, 'm'))
    assert.match(readFileSync(join(root, 'LICENSE'), 'utf8'), /Apache License\s+Version 2\.0/)
    assert.is(pkg.license, 'Apache-2.0')
  })

  test('install.sh installs from loopback when the checksum matches, and the binary names its version, commit and date', async () => {
    const out = join(dir.path, 'release')
    const { url, server } = await serveFolder(out)
    try {
      const prefix = join(dir.path, 'prefix')
      const result = await install(url, prefix)
      assert.is(result.code, 0, result.stderr)
      const installed = join(prefix, 'bin', 'service-server')
      const version = await runCommand(installed, ['--version'])
      assert.is(version.code, 0)
      const commit = spawnSync('git', ['-C', root, 'rev-parse', '--short=12', 'HEAD'], {
        encoding: 'utf8',
      }).stdout.trim()
      assert.match(
        version.stdout.trim(),
        new RegExp(
          `^${pkg.version.replace(/\./g, '\\.')} \\(commit ${commit}, built \\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ\\)$`,
        ),
      )
      assert.match(result.stdout, /installed .*service-server: /)

      // The documents the installed binary serves name the same version and the licence.
      const home = join(dir.path, 'home')
      mkdirSync(home)
      for (const mode of ['workspace', 'control-plane'] as const) {
        const child = await startChild(installed, ['--mode', mode, '--port', '0', '--data-dir', join(home, mode)], {
          cwd: home,
          env: { HOME: home, XDG_CONFIG_HOME: join(home, '.config'), SERVICE_CONTROL_PLANE_CONFIG: undefined },
        })
        try {
          const doc = await (await fetch(`${child.url}/openapi.json`)).json()
          assert.is(doc.info.version, pkg.version, mode)
          assert.equal(doc.info.license, { name: 'Apache License 2.0', identifier: 'Apache-2.0' })
          const health = await (await fetch(`${child.url}/health`)).json()
          assert.is(health.version, pkg.version)
        } finally {
          await child.stop()
        }
      }
    } finally {
      server.close()
    }
  })

  test('install.sh refuses a tampered archive and a missing checksum, and installs nothing', async () => {
    const out = join(dir.path, 'release')
    const name = archiveName(pkg.version, target)
    const tampered = join(dir.path, 'tampered')
    mkdirSync(tampered)
    copyFileSync(join(out, 'SHA256SUMS'), join(tampered, 'SHA256SUMS'))
    const bytes = readFileSync(join(out, name))
    bytes[bytes.length - 100] = (bytes[bytes.length - 100]! + 1) % 256
    writeFileSync(join(tampered, name), bytes)
    const unlisted = join(dir.path, 'unlisted')
    mkdirSync(unlisted)
    copyFileSync(join(out, name), join(unlisted, name))
    writeFileSync(join(unlisted, 'SHA256SUMS'), '')
    for (const [folder, message] of [
      [tampered, /checksum mismatch/],
      [unlisted, /lists no archive/],
    ] as const) {
      const { url, server } = await serveFolder(folder)
      try {
        const prefix = join(dir.path, `refused-${folder.split('/').pop()}`)
        const result = await install(url, prefix)
        assert.is(result.code, 1, result.stdout)
        assert.match(result.stderr, message)
        assert.not.ok(existsSync(join(prefix, 'bin', 'service-server')), 'nothing installed')
      } finally {
        server.close()
      }
    }
  })
}

test.run()

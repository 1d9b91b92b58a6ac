import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { assert, suite, withTempDir } from '../../../tests/harness.ts'
import { directoryHeaderValue, downstreamResponseHeaders, upstreamRequestHeaders } from './header-policy.ts'
import { ambiguousPath, pinnedUpstreamUrl, sessionIdInPath, upstreamRelativePath } from './directory-pin.ts'
import { restartDelayMs, sidecarEnvironment } from './managed-sidecar.ts'
import { filterResults } from './result-filter.ts'
import { ReloadDebouncer } from './sidecar-reload.ts'
import { MOUNT_MISMATCH_PATH, workspaceMountRewrite } from './workspace-mount.ts'

const units = suite('workspace/sidecar mount, pinning and policies')
const rewrite = workspaceMountRewrite(['ws_a', 'ws_b'])
const at = (path: string) => rewrite(new URL(`http://x${path}`))?.pathname ?? null

units('the /w/:id mount maps onto root routes and refuses mismatched or unknown ids', () => {
  assert.is(at('/w/ws_a/workspace/ws_a/config'), '/workspace/ws_a/config')
  assert.is(at('/w/ws_a/workspace/ws_b/config'), MOUNT_MISMATCH_PATH)
  assert.is(at('/w/ws_a/status'), '/status')
  assert.is(at('/w/ws_a/files/sessions/fs_1/renew'), '/files/sessions/fs_1/renew')
  assert.is(at('/w/ws_zz/status'), MOUNT_MISMATCH_PATH)
  assert.is(at('/w/ws_a/sidecar/global/health'), null, 'the sidecar mount is its own route')
  assert.is(at('/w/ws_a/unknown'), null)
  assert.is(at('/workspace/ws_a/config'), null)
  assert.is(rewrite(new URL('http://x/w/ws_a/status?x=1'))!.search, '?x=1')
})

units('search results named by a file URL are kept inside the workspace and dropped outside it', async () => {
  await withTempDir((dir) => {
    const root = join(dir, 'ws')
    mkdirSync(root)
    writeFileSync(join(root, 'in.ts'), '')
    writeFileSync(join(dir, 'out.ts'), '')
    symlinkSync(dir, join(root, 'up'))
    const item = (path: string) => ({ location: { uri: pathToFileURL(path).href } })
    const kept = filterResults(root, {
      data: [item(join(root, 'in.ts')), item(join(root, 'up', 'out.ts')), { location: { uri: 'file://%zz' } }, 'in.ts'],
    })
    assert.equal(kept, { data: [item(join(root, 'in.ts')), { location: { uri: 'file://%zz' } }, 'in.ts'] })
  })
})

units('pinning resolves dot segments first and refuses paths that climb above the base', () => {
  const url = pinnedUpstreamUrl('http://h:1/base', '/session/%2e%2e/%2E%2E/global/dispose', '', '/d')
  assert.is(url, null)
  const inside = pinnedUpstreamUrl('http://h:1', '/session/%2e%2e/global/dispose', '?directory=/x', '/d')!
  assert.is(upstreamRelativePath(inside, 'http://h:1'), '/global/dispose')
  assert.equal([...inside.searchParams], [['directory', '/d']])
})

units('V2 location queries are pinned like directory, and paths OpenCode would route loosely are ambiguous', () => {
  const v2 = pinnedUpstreamUrl(
    'http://h:1',
    '/api/fs/read/secret.txt',
    '?location[directory]=/etc&Location.directory=/x&q=1',
    '/d',
  )!
  assert.equal([...v2.searchParams].sort(), [
    ['directory', '/d'],
    ['location[directory]', '/d'],
    ['q', '1'],
  ])
  const bare = pinnedUpstreamUrl('http://h:1', '/api/fs/list', '', '/d')!
  assert.is(bare.searchParams.get('location[directory]'), '/d')
  assert.is(pinnedUpstreamUrl('http://h:1', '/session', '', '/d')!.searchParams.has('location[directory]'), false)
  for (const path of ['//session/ses_1', '/session//ses_1', '/session/ses_1;x', '/global%2Fdispose'])
    assert.ok(ambiguousPath(path), path)
  assert.is(ambiguousPath('/session/ses_1/message'), null)
  assert.is(sessionIdInPath('/Session/ses_1'), 'ses_1', 'OpenCode routes case-insensitively')
})

units('session ids are recognised on every session prefix, collection routes are not sessions', () => {
  assert.is(sessionIdInPath('/session/ses_1/message'), 'ses_1')
  assert.is(sessionIdInPath('/experimental/session/ses_2/background'), 'ses_2')
  assert.is(sessionIdInPath('/api/session/ses_3'), 'ses_3')
  assert.is(sessionIdInPath('/session/status'), null)
  assert.is(sessionIdInPath('/session'), null)
})

units('header policy: hop-by-hop and client identity are dropped both ways, sidecar auth and directory set', () => {
  const up = upstreamRequestHeaders(
    new Headers({
      connection: 'x-secret',
      'x-secret': '1',
      authorization: 'Bearer t',
      'x-service-anything': 'y',
      cookie: 'a=b',
      te: 'trailers',
      accept: 'text/event-stream',
      'content-type': 'application/json',
    }),
    { authorization: 'Basic abc', directory: '/d' },
  )
  assert.equal(Object.fromEntries(up), {
    accept: 'text/event-stream',
    authorization: 'Basic abc',
    'content-type': 'application/json',
    'x-opencode-directory': '/d',
  })
  const down = downstreamResponseHeaders(
    new Headers({
      'content-type': 'text/plain',
      'content-encoding': 'gzip',
      'content-length': '10',
      'transfer-encoding': 'chunked',
      'access-control-allow-origin': '*',
      'set-cookie': 'a=b',
      'www-authenticate': 'Basic',
      etag: '"1"',
    }),
  )
  assert.equal(Object.fromEntries(down), { 'content-type': 'text/plain', etag: '"1"' })
  assert.is(directoryHeaderValue('/tmp/a b'), '/tmp/a b')
  assert.is(directoryHeaderValue('/tmp/é'), '%2Ftmp%2F%C3%A9')
})

units('managed restarts back off exponentially up to a cap', () => {
  assert.equal([0, 1, 2, 3, 10, 50].map(restartDelayMs), [500, 1000, 2000, 4000, 30_000, 30_000])
})

units('the managed sidecar does not inherit our own settings (tokens, sidecar password)', () => {
  assert.equal(
    sidecarEnvironment({
      PATH: '/bin',
      SERVICE_TOKEN: 't',
      SERVICE_HOST_TOKEN: 'h',
      SERVICE_SIDECAR_PASSWORD: 'p',
      HOME: '/h',
    }),
    { PATH: '/bin', HOME: '/h' },
  )
})

units('automatic reloads are debounced per workspace', async () => {
  const runs: string[] = []
  const debouncer = new ReloadDebouncer(40, (id) => runs.push(id))
  for (let i = 0; i < 5; i++) debouncer.request('a')
  debouncer.request('b')
  assert.is(debouncer.pending, 2)
  await new Promise((r) => setTimeout(r, 120))
  assert.equal(runs.sort(), ['a', 'b'])
})

units.run()

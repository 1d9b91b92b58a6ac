import { gunzipSync } from 'node:zlib'
import { assert, suite } from '../../tests/harness.ts'
import { startTestControlPlane } from '../control-plane/testing/test-control-plane.ts'
import { startTestServer } from '../workspace/testing/test-kit.ts'
import { buildConsoleAssets, consoleAssets } from './console-assets.ts'
import { CONSOLE_CSP } from './console-routes.ts'

const test = suite('console: static files')

type Fetch = (request: Request) => Response | Promise<Response>
const get = (fetch: Fetch, path: string, headers: Record<string, string> = {}) =>
  Promise.resolve(fetch(new Request(`http://test.local${path}`, { headers })))

/** The page and every file it can load, as paths under /console/. */
function consolePaths(): string[] {
  return ['/console', '/console/', ...[...consoleAssets().files.keys()].map((name) => `/console/${name}`)]
}

async function checkEveryResponse(fetch: Fetch): Promise<void> {
  for (const path of [...consolePaths(), '/console/missing.0123456789ab.mjs', `/console/${'x'.repeat(2000)}.mjs`]) {
    for (const method of ['GET', 'HEAD']) {
      const response = await Promise.resolve(fetch(new Request(`http://test.local${path}`, { method })))
      await response.arrayBuffer()
      assert.is(response.headers.get('content-security-policy'), CONSOLE_CSP, `${method} ${path}`)
      assert.is(response.headers.get('x-frame-options'), 'DENY', `${method} ${path}`)
      assert.is(response.headers.get('x-content-type-options'), 'nosniff', `${method} ${path}`)
      assert.is(response.headers.get('referrer-policy'), 'no-referrer', `${method} ${path}`)
    }
  }
}

test('every console response in workspace mode carries the strict CSP, also HEAD and 404', async () => {
  const server = await startTestServer({ fixture: false })
  try {
    await checkEveryResponse(server.app.fetch)
  } finally {
    await server.dispose()
  }
})

test('every console response in control-plane mode carries the strict CSP, also HEAD and 404', async () => {
  const cp = await startTestControlPlane()
  try {
    await checkEveryResponse(cp.app.fetch)
  } finally {
    await cp.close()
  }
})

test('the policy forbids inline script, eval, other hosts and framing', () => {
  const directives = new Map(CONSOLE_CSP.split('; ').map((d) => [d.split(' ')[0], d.split(' ').slice(1)]))
  assert.equal(directives.get('script-src'), ["'self'"])
  assert.equal(directives.get('connect-src'), ["'self'"])
  assert.equal(directives.get('frame-ancestors'), ["'none'"])
  assert.equal(directives.get('default-src'), ["'none'"])
  assert.not.match(CONSOLE_CSP, /unsafe-inline|unsafe-eval|https?:|\*/)
})

test('the page is never cached and hashed files are cached for a year', async () => {
  const server = await startTestServer({ fixture: false })
  try {
    const page = await get(server.app.fetch, '/console/')
    const html = await page.text()
    assert.is(page.status, 200)
    assert.match(page.headers.get('content-type') ?? '', /^text\/html/)
    assert.is(page.headers.get('cache-control'), 'no-store')
    const referenced = [...html.matchAll(/\/console\/([a-z0-9-]+\.[0-9a-f]{12}\.(?:mjs|css))/g)].map((m) => m[1]!)
    assert.is(referenced.length, 2, 'the page loads one style sheet and one entry module, both hashed')
    for (const name of referenced) {
      const file = await get(server.app.fetch, `/console/${name}`)
      await file.arrayBuffer()
      assert.is(file.status, 200, name)
      assert.is(file.headers.get('cache-control'), 'public, max-age=31536000, immutable', name)
    }
    const stale = await get(server.app.fetch, '/console/main.mjs')
    assert.is(stale.status, 404, 'an unhashed name is not served (it could be cached forever)')
    assert.is(stale.headers.get('cache-control'), 'no-store')
  } finally {
    await server.dispose()
  }
})

test('files are sent gzipped to clients that accept it and identical once decompressed', async () => {
  const server = await startTestServer({ fixture: false })
  try {
    const name = [...consoleAssets().files.keys()].find((n) => n.startsWith('dom.'))!
    const plain = await get(server.app.fetch, `/console/${name}`)
    const zipped = await get(server.app.fetch, `/console/${name}`, { 'accept-encoding': 'br, gzip;q=0.8' })
    const refused = await get(server.app.fetch, `/console/${name}`, { 'accept-encoding': 'gzip;q=0' })
    assert.is(plain.headers.get('content-encoding'), null)
    assert.is(refused.headers.get('content-encoding'), null)
    await refused.arrayBuffer()
    assert.is(zipped.headers.get('content-encoding'), 'gzip')
    assert.is(zipped.headers.get('vary'), 'accept-encoding')
    const text = await plain.text()
    assert.is(gunzipSync(new Uint8Array(await zipped.arrayBuffer())).toString('utf8'), text)
  } finally {
    await server.dispose()
  }
})

test('the whole console is under 150 KB gzipped', () => {
  const { page, files } = consoleAssets()
  let total = page.gzip.byteLength
  for (const file of files.values()) total += file.gzip.byteLength
  assert.ok(total < 150 * 1024, `console is ${total} bytes gzipped`)
  assert.ok(total > 1024, 'the measurement covers real files')
})

test('the bundle holds no token, key, inline handler or URL of another host', () => {
  const { page, files } = consoleAssets()
  const decoder = new TextDecoder()
  for (const file of [page, ...files.values()]) {
    const text = decoder.decode(file.body)
    assert.not.match(text, /\b(?:https?|wss?):\/\//i, `${file.name} names an absolute URL`)
    assert.not.match(text, /\/\/[a-z0-9-]+\.[a-z]{2,}\//i, `${file.name} names a protocol-relative URL`)
    assert.not.match(text, /\b(?:svc|sst|svi|sk|pk|ghp|xox[bp])_[A-Za-z0-9_-]{12,}/, `${file.name} holds a token`)
    assert.not.match(text, /-----BEGIN [A-Z ]*PRIVATE KEY-----/, `${file.name} holds a key`)
    assert.not.match(text, /\beval\s*\(|new Function\s*\(|\.innerHTML\s*=|insertAdjacentHTML/, `${file.name}`)
  }
  assert.not.match(decoder.decode(page.body), /<script(?![^>]*\bsrc=)[^>]*>|\son[a-z]+=|style=/i)
})

test('a changed module renames itself and every module that imports it', () => {
  const before = buildConsoleAssets('<script type="module" src="/console/a.mjs"></script>', {
    'a.mjs': "import './b.mjs'\n",
    'b.mjs': 'export const x = 1\n',
    'c.mjs': 'export const y = 1\n',
  })
  const after = buildConsoleAssets('<script type="module" src="/console/a.mjs"></script>', {
    'a.mjs': "import './b.mjs'\n",
    'b.mjs': 'export const x = 2\n',
    'c.mjs': 'export const y = 1\n',
  })
  const names = (assets: ReturnType<typeof buildConsoleAssets>) => [...assets.files.keys()].sort()
  const [a1, b1, c1] = names(before)
  const [a2, b2, c2] = names(after)
  assert.is.not(b1, b2)
  assert.is.not(a1, a2, 'the importer follows its dependency')
  assert.is(c1, c2, 'an unrelated module keeps its name')
  const page = new TextDecoder().decode(after.page.body)
  assert.ok(page.includes(`/console/${a2}`), page)
  const importer = new TextDecoder().decode(after.files.get(a2!)!.body)
  assert.ok(importer.includes(`'./${b2}'`), importer)
})

test('a reference to a file that is not embedded fails the build of the table', () => {
  assert.throws(() => buildConsoleAssets('', { 'a.mjs': "import './gone.mjs'\n" }), /gone\.mjs/)
  assert.throws(() => buildConsoleAssets('', { 'a.mjs': "import './b.mjs'\n", 'b.mjs': "import './a.mjs'\n" }), /cycle/)
})

test('the console routes are documented in both OpenAPI documents', async () => {
  const server = await startTestServer({ fixture: false })
  const cp = await startTestControlPlane()
  try {
    for (const doc of [server.app.openapi(), cp.app.openapi()]) {
      const paths = doc.paths as Record<string, Record<string, unknown>>
      assert.ok(paths['/console']?.get, 'GET /console')
      assert.ok(paths['/console/{path}']?.get, 'GET /console/{path}')
    }
    const wsPaths = server.app.openapi().paths as Record<string, Record<string, unknown>>
    assert.ok(wsPaths['/console/sessions']?.post)
    assert.ok(wsPaths['/console/sessions/host']?.post)
    assert.ok(wsPaths['/console/sessions/current']?.delete)
  } finally {
    await server.dispose()
    await cp.close()
  }
})

test.run()

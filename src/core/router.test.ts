import { assert, suite } from '../../tests/harness.ts'
import { createRouteTable } from './router.ts'

const test = suite('core/router')

const table = createRouteTable([
  { method: 'GET', path: '/health' },
  { method: 'GET', path: '/v1/items/:itemId' },
  { method: 'GET', path: '/k/:kind' },
  { method: 'GET', path: '/k/new' },
  { method: 'DELETE', path: '/v1/items/:itemId' },
  { method: 'GET', path: '/v1/files/:path+' },
  { method: 'GET', path: '/v1/assets/*' },
  { method: 'POST', path: '/v1/items' },
])
const found = (method: string, path: string) => {
  const match = table.match(method, path)
  return match ? { path: match.route.path, params: match.params && { ...match.params } } : null
}

test('a parameter is one segment, kept percent-encoded; a literal path is found without params', () => {
  assert.equal(found('GET', '/v1/items/itm_1'), { path: '/v1/items/:itemId', params: { itemId: 'itm_1' } })
  assert.equal(found('GET', '/v1/items/a%2Fb'), { path: '/v1/items/:itemId', params: { itemId: 'a%2Fb' } })
  assert.equal(found('GET', '/v1/items/a/b'), null)
  assert.equal(found('GET', '/health'), { path: '/health', params: null })
})

test('registration order decides: a literal path declared after a pattern that matches it goes to the pattern', () => {
  assert.equal(found('GET', '/k/new'), { path: '/k/:kind', params: { kind: 'new' } })
  assert.equal(found('GET', '/k/other'), { path: '/k/:kind', params: { kind: 'other' } })
})

test('a greedy parameter and a wildcard take the rest of the path', () => {
  assert.equal(found('GET', '/v1/files/a/b/c.md'), { path: '/v1/files/:path+', params: { path: 'a/b/c.md' } })
  assert.equal(found('GET', '/v1/files/'), null, 'an empty rest does not match :path+')
  assert.equal(found('GET', '/v1/assets/x/y')?.path, '/v1/assets/*')
  assert.equal(found('GET', '/v1/assets')?.path, '/v1/assets/*')
})

test('trailing slashes are ignored, other methods are not matched, and the allowed methods say which exist', () => {
  assert.equal(found('GET', '/health//'), { path: '/health', params: null })
  assert.equal(found('DELETE', '/v1/items/x/'), { path: '/v1/items/:itemId', params: { itemId: 'x' } })
  assert.equal(found('PUT', '/v1/items/x'), null)
  assert.equal(table.allowed('/v1/items/x').sort(), ['DELETE', 'GET', 'HEAD'])
  assert.equal(table.allowed('/v1/items'), ['POST'])
  assert.equal(table.allowed('/nowhere'), [])
})

interface Declared {
  method: string
  path: string
  subroutes?: () => Declared[]
}

test('a route serving subroutes answers with the first of them that matches, else itself, built on first use', () => {
  let built = 0
  const proxy: Declared = {
    method: 'GET',
    path: '/p/:id/up/:rest+',
    subroutes: () => {
      built++
      return [
        { method: 'GET', path: '/p/:id/up/items/:item' },
        { method: 'GET', path: '/p/:id/up/items/new' },
        { method: 'GET', path: '/p/:id/up/health' },
      ]
    },
  }
  const served = createRouteTable<Declared>([{ method: 'GET', path: '/p/:id/own' }, proxy])
  assert.is(built, 0, 'nothing is built at start')
  const at = (path: string) => {
    const match = served.match('GET', path)
    return match && { path: match.route.path, params: match.params && { ...match.params } }
  }
  assert.equal(at('/p/a/up/items/new'), { path: '/p/:id/up/items/:item', params: { id: 'a', item: 'new' } })
  assert.equal(at('/p/a/up/health/'), { path: '/p/:id/up/health', params: { id: 'a' } })
  assert.equal(at('/p/a/up/Health'), { path: '/p/:id/up/:rest+', params: { id: 'a', rest: 'Health' } })
  assert.equal(at('/p/a/up/items/x/y'), { path: '/p/:id/up/:rest+', params: { id: 'a', rest: 'items/x/y' } })
  assert.equal(at('/p/a/own'), { path: '/p/:id/own', params: { id: 'a' } })
  assert.is(served.match('POST', '/p/a/up/health'), null)
  assert.is(built, 1, 'built once')
  assert.equal(
    served.routes.map((r) => r.path),
    ['/p/:id/own', '/p/:id/up/:rest+'],
  )
})

test('subroutes a route would not match are refused, and so is a route without a greedy tail', () => {
  const refused = (sub: Declared) =>
    assert.throws(() =>
      createRouteTable<Declared>([{ method: 'GET', path: '/up/:rest+', subroutes: () => [sub] }]).match('GET', '/up/x'),
    )
  refused({ method: 'POST', path: '/up/x' })
  refused({ method: 'GET', path: '/other/x' })
  refused({ method: 'GET', path: '/up/:name' })
  refused({ method: 'GET', path: '/up/*' })
  refused({ method: 'GET', path: '/up/x', subroutes: () => [] })
  assert.throws(() => createRouteTable<Declared>([{ method: 'GET', path: '/up/:id', subroutes: () => [] }]))
})

test.run()

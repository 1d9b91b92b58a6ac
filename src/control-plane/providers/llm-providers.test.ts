/**
 * Model providers: the embedded catalog and its replacement file, catalog and custom providers,
 * keys never returned by reads and never stored in plaintext (the raw database file, WAL
 * included, is searched for the key), and credential reads gated by an explicit grant and
 * audited.
 */
import { storedText } from '../testing/stored-text.ts'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { assert, suite, withTempDir } from '../../../tests/harness.ts'
import { ConfigError } from '../../core/settings.ts'
import { buildFixtureOrg } from '../testing/org-fixture.ts'
import { startTestControlPlane } from '../testing/test-control-plane.ts'
import { EMBEDDED_PROVIDER_CATALOG } from './catalog-data.ts'
import { API_STYLES } from './catalog-provider.ts'
import { loadProviderCatalog } from './provider-catalog.ts'

const test = suite('control-plane/llm-providers', { timeoutMs: 60_000 })

const KEY = 'sk-test-PLAINTEXT-MARKER-9f8e7d6c5b4a'

test('the embedded catalog is well formed: unique ids, known API styles, models with context windows', () => {
  const catalog = loadProviderCatalog(null)
  assert.is(catalog.source, 'embedded')
  assert.ok(catalog.providers.length >= 10)
  assert.is(new Set(catalog.providers.map((p) => p.id)).size, catalog.providers.length)
  for (const p of EMBEDDED_PROVIDER_CATALOG) {
    assert.ok((API_STYLES as readonly string[]).includes(p.api), p.id)
    assert.ok(p.models.length > 0 && p.models.every((m) => m.contextWindow > 0), p.id)
    assert.is(new Set(p.models.map((m) => m.id)).size, p.models.length, `${p.id} model ids unique`)
  }
  assert.is(catalog.find('anthropic')?.api, 'anthropic')
  assert.is(catalog.find('ollama')?.requiresApiKey, false)
})

test('a catalog file replaces the embedded catalog, and a bad file stops start-up naming the field', async () => {
  await withTempDir(async (dir) => {
    const file = join(dir, 'catalog.json')
    writeFileSync(
      file,
      JSON.stringify({
        providers: [
          {
            id: 'inhouse',
            name: 'In-house gateway',
            api: 'openai-compatible',
            baseUrl: 'https://llm.internal.example/v1',
            env: ['INHOUSE_KEY'],
            doc: null,
            requiresApiKey: true,
            models: [{ id: 'big', name: 'Big', contextWindow: 32000, reasoning: false, toolCall: true }],
          },
        ],
      }),
    )
    const catalog = loadProviderCatalog(file)
    assert.is(catalog.source, 'file')
    assert.equal(
      catalog.providers.map((p) => p.id),
      ['inhouse'],
    )
    writeFileSync(
      file,
      JSON.stringify({
        providers: [
          {
            id: 'x',
            name: 'X',
            api: 'telepathy',
            baseUrl: null,
            env: [],
            doc: null,
            requiresApiKey: false,
            models: [],
          },
        ],
      }),
    )
    assert.throws(
      () => loadProviderCatalog(file),
      (e: unknown) => e instanceof ConfigError && /providers\.0\.api/.test((e as Error).message),
    )
    assert.throws(
      () => loadProviderCatalog(join(dir, 'missing.json')),
      (e: unknown) => e instanceof ConfigError,
    )
  })
})

test('providers: catalog and custom endpoints, keys never returned, the database never holds a key in plaintext', async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'llm')
    const token = org.member.token
    const catalog = await t.client.get('/v1/llm-provider-catalog', { token })
    assert.ok(catalog.body.items.some((p: { id: string }) => p.id === 'openai'))
    assert.is(catalog.body.nextCursor, null)
    assert.is((await t.client.get('/v1/llm-provider-catalog/anthropic', { token })).body.item.name, 'Anthropic')
    assert.is((await t.client.get('/v1/llm-provider-catalog/nope', { token })).status, 404)

    const created = await t.client.post('/v1/llm-providers', {
      token,
      json: {
        name: 'Team OpenAI',
        catalogProviderId: 'openai',
        models: ['gpt-4.1', { id: 'gpt-4o-mini', name: 'Cheap' }],
        apiKey: KEY,
      },
    })
    assert.is(created.status, 201, JSON.stringify(created.body))
    const item = created.body.item
    assert.equal(
      [item.source, item.api, item.baseUrl, item.hasApiKey],
      ['catalog', 'openai', 'https://api.openai.com/v1', true],
    )
    assert.equal(item.models, [
      { id: 'gpt-4.1', name: 'GPT-4.1' },
      { id: 'gpt-4o-mini', name: 'Cheap' },
    ])
    assert.not.ok(JSON.stringify(created.body).includes(KEY))
    const custom = await t.client.post('/v1/llm-providers', {
      token,
      json: {
        name: 'Gateway',
        custom: { baseUrl: 'https://llm.internal.example/v1', api: 'openai-compatible' },
        models: ['house-model'],
      },
    })
    assert.is(custom.status, 201)
    assert.equal(
      [custom.body.item.source, custom.body.item.hasApiKey, custom.body.item.models],
      ['custom', false, [{ id: 'house-model', name: 'house-model' }]],
    )

    const invalid: Array<[Record<string, unknown>, string]> = [
      [{ name: 'x', catalogProviderId: 'openai', models: ['not-a-model'] }, 'models.0'],
      [{ name: 'x', catalogProviderId: 'nope', models: ['m'] }, 'catalogProviderId'],
      [{ name: 'x', models: ['m'] }, ''],
      [
        {
          name: 'x',
          catalogProviderId: 'openai',
          custom: { baseUrl: 'https://a.example', api: 'openai' },
          models: ['gpt-4o'],
        },
        '',
      ],
      [{ name: 'x', custom: { baseUrl: 'ftp://a.example', api: 'openai' }, models: ['m'] }, 'custom.baseUrl'],
    ]
    for (const [body, path] of invalid) {
      const res = await t.client.post('/v1/llm-providers', { token, json: body })
      assert.is(res.status, 422, JSON.stringify(body))
      assert.is(res.body.details.issues[0].path, path, JSON.stringify(body))
    }
    assert.is(
      (
        await t.client.post('/v1/llm-providers', {
          token,
          json: { name: 'Team OpenAI', custom: { baseUrl: 'https://a.example', api: 'openai' }, models: ['m'] },
        })
      ).status,
      409,
    )

    for (const path of [`/v1/llm-providers/${item.id}`, '/v1/llm-providers']) {
      const res = await t.client.get(path, { token })
      assert.not.ok(JSON.stringify(res.body).includes(KEY), path)
    }
    // Rotate the key, then remove the other provider's: the new key is sealed too.
    const rotated = `${KEY}-rotated`
    assert.is(
      (await t.client.patch(`/v1/llm-providers/${item.id}`, { token, json: { apiKey: rotated, models: ['gpt-4.1'] } }))
        .body.item.models.length,
      1,
    )
    const kept = await t.client.patch(`/v1/llm-providers/${item.id}`, { token, json: { name: 'Renamed' } })
    assert.is(kept.body.item.hasApiKey, true, 'omitting apiKey keeps it')
    assert.is((await t.client.get(`/v1/llm-providers/${item.id}/credential`, { token })).body.item.apiKey, rotated)

    const stored = await storedText(t.app)
    assert.ok(stored.includes('Renamed'), 'the search reads the live database and WAL')
    assert.not.ok(stored.includes(KEY), 'no key in plaintext in the database or WAL')
    assert.not.ok(stored.includes('PLAINTEXT-MARKER'))
    const audit = await t.client.get('/v1/audit-events?limit=100', { token: org.owner.token })
    assert.not.ok(JSON.stringify(audit.body).includes('PLAINTEXT-MARKER'), 'audit holds no key')

    const cleared = await t.client.patch(`/v1/llm-providers/${item.id}`, { token, json: { apiKey: null } })
    assert.is(cleared.body.item.hasApiKey, false)
    assert.is((await t.client.get(`/v1/llm-providers/${item.id}/credential`, { token })).body.code, 'no_api_key')
  } finally {
    await t.close()
  }
})

test('credential reads need an explicit grant (admin rights are not enough), are audited, and stop when the grant is revoked', async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'cred')
    const provider = (
      await t.client.post('/v1/llm-providers', {
        token: org.owner.token,
        json: { name: 'Anthropic', catalogProviderId: 'anthropic', models: ['claude-sonnet-4-5'], apiKey: KEY },
      })
    ).body.item.id
    const path = `/v1/llm-providers/${provider}/credential`
    const own = await t.client.get(path, { token: org.owner.token })
    assert.is(own.status, 200, 'the creator holds a manager grant')
    assert.is(own.headers.get('cache-control'), 'no-store')
    assert.equal(own.body.item, {
      llmProviderId: provider,
      api: 'anthropic',
      baseUrl: 'https://api.anthropic.com/v1',
      apiKey: KEY,
    })
    // The member cannot even see it; the admin sees it (acts as manager) but holds no grant.
    assert.is((await t.client.get(path, { token: org.member.token })).status, 404)
    assert.is((await t.client.get(`/v1/llm-providers/${provider}`, { token: org.member.token })).status, 404)
    const admin = await t.client.get(path, { token: org.admin.token })
    assert.is(admin.status, 403)
    assert.is(admin.body.code, 'credential_grant_required')
    assert.is((await t.client.get(path, { apiKey: org.adminKey.key })).status, 403)
    // A team grant lets the member read it.
    const team = (
      await t.client.post('/v1/teams', {
        token: org.owner.token,
        json: { name: 'llm users', memberIds: [org.member.memberId] },
      })
    ).body.item.id
    const grant = await t.client.post(`/v1/llm-providers/${provider}/access`, {
      token: org.owner.token,
      json: { teamId: team, role: 'viewer' },
    })
    assert.is(grant.status, 201)
    assert.is((await t.client.get(path, { token: org.member.token })).body.item.apiKey, KEY)
    assert.is(
      (await t.client.patch(`/v1/llm-providers/${provider}`, { token: org.member.token, json: { name: 'mine' } }))
        .status,
      403,
      'viewer cannot change it',
    )
    const audit = await t.client.get('/v1/audit-events?action=llm_provider.credential_read', { token: org.owner.token })
    assert.equal(
      audit.body.items.map((e: { actor: { memberId: string } }) => e.actor.memberId),
      [org.member.memberId, org.owner.memberId],
      'each successful read audited, newest first',
    )
    await t.client.delete(`/v1/llm-providers/${provider}/access/${grant.body.item.id}`, { token: org.owner.token })
    assert.is((await t.client.get(path, { token: org.member.token })).status, 404, 'revocation applies at once')
    assert.is(
      (await t.client.delete(`/v1/llm-providers/${provider}`, { token: org.admin.token })).status,
      204,
      'admins manage providers',
    )
    assert.is((await t.client.get(path, { token: org.owner.token })).status, 404)
  } finally {
    await t.close()
  }
})

test.run()

/**
 * The isolation matrix for the catalog: organization A's owner (who acts as manager on every
 * catalog resource of A) calls every id-taking catalog route with organization B's ids, in paths
 * and in bodies, and must get 404 each time, with B's catalog byte-for-byte unchanged.
 */
import { assert, suite } from '../../../tests/harness.ts'
import type { CallOptions, ContractClient } from '../testing/contract-client.ts'
import { buildFixtureOrg, type FixtureOrg } from '../testing/org-fixture.ts'
import { startTestControlPlane } from '../testing/test-control-plane.ts'

const test = suite('control-plane/catalog-isolation', { timeoutMs: 60_000 })

interface Side {
  org: FixtureOrg
  object: string
  version: string
  plugin: string
  market: string
  hub: string
  provider: string
  grant: string
  assignment: string
  pluginAssignment: string
  team: string
}

async function seed(client: ContractClient, org: FixtureOrg): Promise<Side> {
  const token = org.owner.token
  const id = async (path: string, json: unknown) => {
    const res = await client.post(path, { token, json })
    assert.is(res.status, 201, `${path}: ${JSON.stringify(res.body)}`)
    return res.body.item.id as string
  }
  const object = await id('/v1/config-objects', {
    type: 'skill',
    sourceMode: 'cloud',
    title: 'S',
    input: { rawSourceText: '---\nname: s\ndescription: d\n---\nbody' },
  })
  const version = (await client.get(`/v1/config-objects/${object}/versions/latest`, { token })).body.item.id
  const plugin = await id('/v1/plugins', { name: 'P' })
  const market = await id('/v1/marketplaces', { name: 'M' })
  const hub = await id('/v1/skill-hubs', { name: 'H' })
  const provider = await id('/v1/llm-providers', {
    name: 'L',
    catalogProviderId: 'openai',
    models: ['gpt-4o'],
    apiKey: 'sk-b',
  })
  const team = await id('/v1/teams', { name: 'T', memberIds: [org.member.memberId] })
  await id(`/v1/plugins/${plugin}/config-objects`, { configObjectId: object })
  await id(`/v1/marketplaces/${market}/plugins`, { pluginId: plugin })
  await id(`/v1/skill-hubs/${hub}/skills`, { skillId: object })
  const grant = await id(`/v1/config-objects/${object}/access`, { memberId: org.member.memberId, role: 'viewer' })
  const assignment = await id(`/v1/skill-hubs/${hub}/assignments`, { teamId: team })
  const pluginAssignment = await id(`/v1/plugins/${plugin}/assignments`, { teamId: team })
  return { org, object, version, plugin, market, hub, provider, grant, assignment, pluginAssignment, team }
}

async function snapshot(client: ContractClient, b: Side): Promise<string> {
  const token = b.org.owner.token
  const paths = [
    '/v1/config-objects?deleted=include',
    `/v1/config-objects/${b.object}/versions`,
    `/v1/config-objects/${b.object}/access`,
    '/v1/plugins',
    `/v1/plugins/${b.plugin}/config-objects`,
    `/v1/plugins/${b.plugin}/access`,
    `/v1/plugins/${b.plugin}/assignments`,
    '/v1/marketplaces',
    `/v1/marketplaces/${b.market}/plugins`,
    `/v1/marketplaces/${b.market}/access`,
    '/v1/skill-hubs',
    `/v1/skill-hubs/${b.hub}/skills`,
    `/v1/skill-hubs/${b.hub}/assignments`,
    `/v1/skill-hubs/${b.hub}/access`,
    '/v1/llm-providers',
    `/v1/llm-providers/${b.provider}/access`,
    '/v1/audit-events?limit=100',
  ]
  const parts = await Promise.all(paths.map((p) => client.get(p, { token })))
  for (const part of parts) assert.is(part.status, 200)
  return JSON.stringify(parts.map((p) => p.body))
}

test("every id-taking catalog route given the other organization's ids is 404 and changes nothing", async () => {
  const t = await startTestControlPlane()
  try {
    const a = await seed(t.client, await buildFixtureOrg(t.client, 'cat-a'))
    const b = await seed(t.client, await buildFixtureOrg(t.client, 'cat-b'))
    const before = await snapshot(t.client, b)
    const skill = { rawSourceText: '---\nname: s\ndescription: d\n---\nbody' }
    type Attempt = { method: string; path: string; json?: unknown }
    const co = `/v1/config-objects/${b.object}`
    const attempts: Record<string, Attempt[]> = {
      getConfigObject: [{ method: 'GET', path: co }],
      addConfigObjectVersion: [{ method: 'POST', path: `${co}/versions`, json: { input: skill } }],
      listConfigObjectVersions: [{ method: 'GET', path: `${co}/versions` }],
      getLatestConfigObjectVersion: [{ method: 'GET', path: `${co}/versions/latest` }],
      getConfigObjectVersion: [
        { method: 'GET', path: `${co}/versions/${b.version}` },
        { method: 'GET', path: `/v1/config-objects/${a.object}/versions/${b.version}` },
      ],
      getResolvedConfigObject: [{ method: 'GET', path: `${co}/resolved` }],
      archiveConfigObject: [{ method: 'POST', path: `${co}/archive` }],
      deleteConfigObject: [{ method: 'POST', path: `${co}/delete` }],
      restoreConfigObject: [{ method: 'POST', path: `${co}/restore` }],
      listConfigObjectAccess: [{ method: 'GET', path: `${co}/access` }],
      grantConfigObjectAccess: [
        { method: 'POST', path: `${co}/access`, json: { orgWide: true, role: 'manager' } },
        {
          method: 'POST',
          path: `/v1/config-objects/${a.object}/access`,
          json: { memberId: b.org.member.memberId, role: 'viewer' },
        },
        { method: 'POST', path: `/v1/config-objects/${a.object}/access`, json: { teamId: b.team, role: 'viewer' } },
      ],
      revokeConfigObjectAccess: [
        { method: 'DELETE', path: `${co}/access/${b.grant}` },
        { method: 'DELETE', path: `/v1/config-objects/${a.object}/access/${b.grant}` },
      ],
      listConfigObjectPlugins: [{ method: 'GET', path: `${co}/plugins` }],
      addConfigObjectToPlugin: [
        { method: 'POST', path: `${co}/plugins`, json: { pluginId: a.plugin } },
        { method: 'POST', path: `/v1/config-objects/${a.object}/plugins`, json: { pluginId: b.plugin } },
      ],
      removeConfigObjectFromPlugin: [
        { method: 'DELETE', path: `${co}/plugins/${b.plugin}` },
        { method: 'DELETE', path: `/v1/config-objects/${a.object}/plugins/${b.plugin}` },
      ],
      createConfigObject: [
        {
          method: 'POST',
          path: '/v1/config-objects',
          json: { type: 'skill', sourceMode: 'cloud', title: 'x', input: skill, pluginIds: [b.plugin] },
        },
      ],
      getPlugin: [{ method: 'GET', path: `/v1/plugins/${b.plugin}` }],
      updatePlugin: [{ method: 'PATCH', path: `/v1/plugins/${b.plugin}`, json: { name: 'taken' } }],
      deletePlugin: [{ method: 'DELETE', path: `/v1/plugins/${b.plugin}` }],
      archivePlugin: [{ method: 'POST', path: `/v1/plugins/${b.plugin}/archive` }],
      restorePlugin: [{ method: 'POST', path: `/v1/plugins/${b.plugin}/restore` }],
      listPluginAccess: [{ method: 'GET', path: `/v1/plugins/${b.plugin}/access` }],
      grantPluginAccess: [
        { method: 'POST', path: `/v1/plugins/${b.plugin}/access`, json: { orgWide: true, role: 'viewer' } },
      ],
      revokePluginAccess: [{ method: 'DELETE', path: `/v1/plugins/${b.plugin}/access/${b.grant}` }],
      listPluginConfigObjects: [{ method: 'GET', path: `/v1/plugins/${b.plugin}/config-objects` }],
      addPluginConfigObject: [
        { method: 'POST', path: `/v1/plugins/${b.plugin}/config-objects`, json: { configObjectId: a.object } },
        { method: 'POST', path: `/v1/plugins/${a.plugin}/config-objects`, json: { configObjectId: b.object } },
      ],
      removePluginConfigObject: [{ method: 'DELETE', path: `/v1/plugins/${b.plugin}/config-objects/${b.object}` }],
      getResolvedPlugin: [{ method: 'GET', path: `/v1/plugins/${b.plugin}/resolved` }],
      listPluginAssignments: [{ method: 'GET', path: `/v1/plugins/${b.plugin}/assignments` }],
      assignPlugin: [
        { method: 'POST', path: `/v1/plugins/${b.plugin}/assignments`, json: { orgWide: true } },
        { method: 'POST', path: `/v1/plugins/${a.plugin}/assignments`, json: { teamId: b.team } },
        { method: 'POST', path: `/v1/plugins/${a.plugin}/assignments`, json: { memberId: b.org.member.memberId } },
      ],
      unassignPlugin: [
        { method: 'DELETE', path: `/v1/plugins/${b.plugin}/assignments/${b.pluginAssignment}` },
        { method: 'DELETE', path: `/v1/plugins/${a.plugin}/assignments/${b.pluginAssignment}` },
      ],
      getMarketplace: [{ method: 'GET', path: `/v1/marketplaces/${b.market}` }],
      updateMarketplace: [{ method: 'PATCH', path: `/v1/marketplaces/${b.market}`, json: { name: 'taken' } }],
      deleteMarketplace: [{ method: 'DELETE', path: `/v1/marketplaces/${b.market}` }],
      archiveMarketplace: [{ method: 'POST', path: `/v1/marketplaces/${b.market}/archive` }],
      restoreMarketplace: [{ method: 'POST', path: `/v1/marketplaces/${b.market}/restore` }],
      listMarketplaceAccess: [{ method: 'GET', path: `/v1/marketplaces/${b.market}/access` }],
      grantMarketplaceAccess: [
        { method: 'POST', path: `/v1/marketplaces/${b.market}/access`, json: { orgWide: true, role: 'viewer' } },
      ],
      revokeMarketplaceAccess: [{ method: 'DELETE', path: `/v1/marketplaces/${b.market}/access/${b.grant}` }],
      listMarketplacePlugins: [{ method: 'GET', path: `/v1/marketplaces/${b.market}/plugins` }],
      addMarketplacePlugin: [
        { method: 'POST', path: `/v1/marketplaces/${b.market}/plugins`, json: { pluginId: a.plugin } },
        { method: 'POST', path: `/v1/marketplaces/${a.market}/plugins`, json: { pluginId: b.plugin } },
      ],
      removeMarketplacePlugin: [{ method: 'DELETE', path: `/v1/marketplaces/${b.market}/plugins/${b.plugin}` }],
      getResolvedMarketplace: [{ method: 'GET', path: `/v1/marketplaces/${b.market}/resolved` }],
      getSkill: [{ method: 'GET', path: `/v1/skills/${b.object}` }],
      getSkillHub: [{ method: 'GET', path: `/v1/skill-hubs/${b.hub}` }],
      updateSkillHub: [{ method: 'PATCH', path: `/v1/skill-hubs/${b.hub}`, json: { name: 'taken' } }],
      deleteSkillHub: [{ method: 'DELETE', path: `/v1/skill-hubs/${b.hub}` }],
      listSkillHubSkills: [{ method: 'GET', path: `/v1/skill-hubs/${b.hub}/skills` }],
      getResolvedSkillHub: [{ method: 'GET', path: `/v1/skill-hubs/${b.hub}/resolved` }],
      addSkillHubSkill: [
        { method: 'POST', path: `/v1/skill-hubs/${b.hub}/skills`, json: { skillId: a.object } },
        { method: 'POST', path: `/v1/skill-hubs/${a.hub}/skills`, json: { skillId: b.object } },
      ],
      removeSkillHubSkill: [{ method: 'DELETE', path: `/v1/skill-hubs/${b.hub}/skills/${b.object}` }],
      listSkillHubAssignments: [{ method: 'GET', path: `/v1/skill-hubs/${b.hub}/assignments` }],
      assignSkillHub: [
        { method: 'POST', path: `/v1/skill-hubs/${b.hub}/assignments`, json: { orgWide: true } },
        { method: 'POST', path: `/v1/skill-hubs/${a.hub}/assignments`, json: { teamId: b.team } },
      ],
      unassignSkillHub: [
        { method: 'DELETE', path: `/v1/skill-hubs/${b.hub}/assignments/${b.assignment}` },
        { method: 'DELETE', path: `/v1/skill-hubs/${a.hub}/assignments/${b.assignment}` },
      ],
      listSkillHubAccess: [{ method: 'GET', path: `/v1/skill-hubs/${b.hub}/access` }],
      grantSkillHubAccess: [
        { method: 'POST', path: `/v1/skill-hubs/${b.hub}/access`, json: { orgWide: true, role: 'viewer' } },
      ],
      revokeSkillHubAccess: [{ method: 'DELETE', path: `/v1/skill-hubs/${b.hub}/access/${b.grant}` }],
      getLlmProvider: [{ method: 'GET', path: `/v1/llm-providers/${b.provider}` }],
      updateLlmProvider: [{ method: 'PATCH', path: `/v1/llm-providers/${b.provider}`, json: { apiKey: 'sk-stolen' } }],
      deleteLlmProvider: [{ method: 'DELETE', path: `/v1/llm-providers/${b.provider}` }],
      getLlmProviderCredential: [{ method: 'GET', path: `/v1/llm-providers/${b.provider}/credential` }],
      listLlmProviderAccess: [{ method: 'GET', path: `/v1/llm-providers/${b.provider}/access` }],
      grantLlmProviderAccess: [
        { method: 'POST', path: `/v1/llm-providers/${b.provider}/access`, json: { orgWide: true, role: 'viewer' } },
      ],
      revokeLlmProviderAccess: [{ method: 'DELETE', path: `/v1/llm-providers/${b.provider}/access/${b.grant}` }],
      // The catalog's own ids are not organization data; an unknown one is 404 all the same.
      getCatalogProvider: [{ method: 'GET', path: '/v1/llm-provider-catalog/not-a-provider' }],
    }
    const tags = ['config-objects', 'plugins', 'marketplaces', 'skills', 'llm-providers']
    const idRoutes = t.app.contract.routes
      .filter((r) => r.path.includes(':') && (r.tags ?? []).some((tag) => tags.includes(tag)))
      .map((r) => r.operationId)
    assert.equal(
      idRoutes.filter((id) => !attempts[id]),
      [],
      'every id-taking catalog route is in the matrix',
    )
    const credentials: Array<[string, CallOptions]> = [
      ['owner session', { token: a.org.owner.token }],
      ['owner API key', { apiKey: a.org.ownerKey.key }],
    ]
    let calls = 0
    for (const [operationId, list] of Object.entries(attempts)) {
      for (const attempt of list) {
        for (const [who, credential] of credentials) {
          const res = await t.client.call(attempt.method, attempt.path, { ...credential, json: attempt.json })
          calls++
          assert.is(
            res.status,
            404,
            `${operationId} ${attempt.method} ${attempt.path} as ${who}: ${JSON.stringify(res.body)}`,
          )
        }
      }
    }
    assert.ok(calls > 120)
    // Lists never show the other organization's objects either.
    for (const path of [
      '/v1/config-objects?deleted=include',
      '/v1/plugins',
      '/v1/marketplaces',
      '/v1/skill-hubs',
      '/v1/llm-providers',
      '/v1/skills',
      '/v1/me/skills',
      `/v1/config-objects?plugin=${b.plugin}`,
    ]) {
      const res = await t.client.get(path, { token: a.org.owner.token })
      assert.not.ok(
        JSON.stringify(res.body).includes(b.object) ||
          JSON.stringify(res.body).includes(b.plugin) ||
          JSON.stringify(res.body).includes(b.provider),
        path,
      )
    }
    assert.is(await snapshot(t.client, b), before, "B's catalog is unchanged")
  } finally {
    await t.close()
  }
})

test.run()

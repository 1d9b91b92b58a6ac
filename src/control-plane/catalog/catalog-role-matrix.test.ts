/**
 * The role matrix for the catalog families (config objects, plugins, marketplaces, skills and
 * skill hubs, model providers), generated from the policy table by `testing/role-matrix.ts`:
 * every route × {owner, admin, member, owner's key, admin's key, no credential} answers the
 * status the table implies. Each request targets a resource the caller itself created (and so
 * manages), so the per-resource grant check passes and the policy table alone decides.
 */
import { strToU8, zipSync } from 'fflate'
import { assert, suite } from '../../../tests/harness.ts'
import type { CallOptions } from '../testing/contract-client.ts'
import {
  MATRIX_CALLERS,
  runRoleMatrix,
  type MatrixCaller,
  type MatrixRequests,
  type MatrixWorld,
} from '../testing/role-matrix.ts'
import { startTestControlPlane } from '../testing/test-control-plane.ts'

const test = suite('control-plane/catalog-role-matrix', { timeoutMs: 180_000 })

const TAGS = ['config-objects', 'plugins', 'marketplaces', 'skills', 'llm-providers']

function as(w: MatrixWorld, caller: MatrixCaller): CallOptions {
  switch (caller) {
    case 'admin':
      return { token: w.org.admin.token }
    case 'member':
      return { token: w.org.member.token }
    case 'ownerKey':
      return { apiKey: w.org.ownerKey.key }
    case 'adminKey':
      return { apiKey: w.org.adminKey.key }
    default:
      return { token: w.org.owner.token }
  }
}
function memberIdOf(w: MatrixWorld, caller: MatrixCaller): string {
  return caller === 'admin' || caller === 'adminKey'
    ? w.org.admin.memberId
    : caller === 'member'
      ? w.org.member.memberId
      : w.org.owner.memberId
}
async function ok(res: Promise<{ status: number; body: { item?: { id: string } } }>): Promise<string> {
  const r = await res
  if (r.status !== 201 && r.status !== 200)
    throw new Error(`matrix setup failed: ${r.status} ${JSON.stringify(r.body)}`)
  return r.body.item!.id
}
const skillMd = (name: string) => `---\nname: ${name}\ndescription: Matrix skill\n---\n\nBody.\n`
const object = (w: MatrixWorld, c: MatrixCaller) =>
  ok(
    w.client.post('/v1/config-objects', {
      ...as(w, c),
      json: {
        type: 'skill',
        sourceMode: 'cloud',
        title: `obj ${w.seq()}`,
        input: { rawSourceText: skillMd(`m${w.seq()}`) },
      },
    }),
  )
const plugin = (w: MatrixWorld, c: MatrixCaller) =>
  ok(w.client.post('/v1/plugins', { ...as(w, c), json: { name: `plugin ${w.seq()}` } }))
const hub = (w: MatrixWorld, c: MatrixCaller) =>
  ok(w.client.post('/v1/skill-hubs', { ...as(w, c), json: { name: `hub ${w.seq()}` } }))
const provider = (w: MatrixWorld, c: MatrixCaller) =>
  ok(
    w.client.post('/v1/llm-providers', {
      ...as(w, c),
      json: { name: `provider ${w.seq()}`, catalogProviderId: 'openai', models: ['gpt-4o'], apiKey: 'sk-matrix' },
    }),
  )
/** Marketplaces are created by admins; the caller is made a manager so member requests can succeed. */
async function marketplace(w: MatrixWorld, c: MatrixCaller): Promise<string> {
  const id = await ok(
    w.client.post('/v1/marketplaces', { token: w.org.owner.token, json: { name: `market ${w.seq()}` } }),
  )
  await ok(
    w.client.post(`/v1/marketplaces/${id}/access`, {
      token: w.org.owner.token,
      json: { memberId: memberIdOf(w, c), role: 'manager' },
    }),
  )
  return id
}
const grantOn = async (w: MatrixWorld, c: MatrixCaller, base: string) =>
  ok(w.client.post(`${base}/access`, { ...as(w, c), json: { teamId: w.teamId, role: 'viewer' } }))

const REQUESTS: MatrixRequests = {
  listConfigObjects: async () => ({ path: '/v1/config-objects?type=skill&limit=5' }),
  createConfigObject: async (w) => ({
    path: '/v1/config-objects',
    json: { type: 'context', sourceMode: 'cloud', title: `ctx ${w.seq()}`, input: { rawSourceText: 'notes' } },
  }),
  getConfigObject: async (w, c) => ({ path: `/v1/config-objects/${await object(w, c)}` }),
  addConfigObjectVersion: async (w, c) => ({
    path: `/v1/config-objects/${await object(w, c)}/versions`,
    json: { input: { rawSourceText: skillMd('next') } },
  }),
  listConfigObjectVersions: async (w, c) => ({ path: `/v1/config-objects/${await object(w, c)}/versions` }),
  getLatestConfigObjectVersion: async (w, c) => ({ path: `/v1/config-objects/${await object(w, c)}/versions/latest` }),
  getConfigObjectVersion: async (w, c) => {
    const id = await object(w, c)
    const latest = await w.client.get(`/v1/config-objects/${id}/versions/latest`, as(w, c))
    return { path: `/v1/config-objects/${id}/versions/${latest.body.item.id}` }
  },
  getResolvedConfigObject: async (w, c) => ({ path: `/v1/config-objects/${await object(w, c)}/resolved` }),
  archiveConfigObject: async (w, c) => ({ path: `/v1/config-objects/${await object(w, c)}/archive` }),
  deleteConfigObject: async (w, c) => ({ path: `/v1/config-objects/${await object(w, c)}/delete` }),
  restoreConfigObject: async (w, c) => {
    const id = await object(w, c)
    await w.client.post(`/v1/config-objects/${id}/archive`, as(w, c))
    return { path: `/v1/config-objects/${id}/restore` }
  },
  listConfigObjectAccess: async (w, c) => ({ path: `/v1/config-objects/${await object(w, c)}/access` }),
  grantConfigObjectAccess: async (w, c) => ({
    path: `/v1/config-objects/${await object(w, c)}/access`,
    json: { memberId: w.org.member.memberId, role: 'viewer' },
  }),
  revokeConfigObjectAccess: async (w, c) => {
    const base = `/v1/config-objects/${await object(w, c)}`
    return { path: `${base}/access/${await grantOn(w, c, base)}` }
  },

  listConfigObjectPlugins: async (w, c) => ({ path: `/v1/config-objects/${await object(w, c)}/plugins` }),
  addConfigObjectToPlugin: async (w, c) => ({
    path: `/v1/config-objects/${await object(w, c)}/plugins`,
    json: { pluginId: await plugin(w, c) },
  }),
  removeConfigObjectFromPlugin: async (w, c) => {
    const obj = await object(w, c)
    const plg = await plugin(w, c)
    await w.client.post(`/v1/plugins/${plg}/config-objects`, { ...as(w, c), json: { configObjectId: obj } })
    return { path: `/v1/config-objects/${obj}/plugins/${plg}` }
  },

  listPlugins: async () => ({ path: '/v1/plugins' }),
  createPlugin: async (w) => ({ path: '/v1/plugins', json: { name: `created ${w.seq()}` } }),
  getPlugin: async (w, c) => ({ path: `/v1/plugins/${await plugin(w, c)}` }),
  updatePlugin: async (w, c) => ({ path: `/v1/plugins/${await plugin(w, c)}`, json: { description: 'changed' } }),
  deletePlugin: async (w, c) => ({ path: `/v1/plugins/${await plugin(w, c)}` }),
  archivePlugin: async (w, c) => ({ path: `/v1/plugins/${await plugin(w, c)}/archive` }),
  restorePlugin: async (w, c) => {
    const id = await plugin(w, c)
    await w.client.post(`/v1/plugins/${id}/archive`, as(w, c))
    return { path: `/v1/plugins/${id}/restore` }
  },
  listPluginAccess: async (w, c) => ({ path: `/v1/plugins/${await plugin(w, c)}/access` }),
  grantPluginAccess: async (w, c) => ({
    path: `/v1/plugins/${await plugin(w, c)}/access`,
    json: { memberId: w.org.member.memberId, role: 'editor' },
  }),
  revokePluginAccess: async (w, c) => {
    const base = `/v1/plugins/${await plugin(w, c)}`
    return { path: `${base}/access/${await grantOn(w, c, base)}` }
  },
  listPluginConfigObjects: async (w, c) => ({ path: `/v1/plugins/${await plugin(w, c)}/config-objects` }),
  addPluginConfigObject: async (w, c) => ({
    path: `/v1/plugins/${await plugin(w, c)}/config-objects`,
    json: { configObjectId: await object(w, c) },
  }),
  removePluginConfigObject: async (w, c) => {
    const id = await plugin(w, c)
    const obj = await object(w, c)
    await w.client.post(`/v1/plugins/${id}/config-objects`, { ...as(w, c), json: { configObjectId: obj } })
    return { path: `/v1/plugins/${id}/config-objects/${obj}` }
  },
  getResolvedPlugin: async (w, c) => ({ path: `/v1/plugins/${await plugin(w, c)}/resolved` }),

  listMarketplaces: async () => ({ path: '/v1/marketplaces' }),
  createMarketplace: async (w) => ({ path: '/v1/marketplaces', json: { name: `market created ${w.seq()}` } }),
  getMarketplace: async (w, c) => ({ path: `/v1/marketplaces/${await marketplace(w, c)}` }),
  updateMarketplace: async (w, c) => ({
    path: `/v1/marketplaces/${await marketplace(w, c)}`,
    json: { name: `renamed ${w.seq()}` },
  }),
  deleteMarketplace: async (w, c) => ({ path: `/v1/marketplaces/${await marketplace(w, c)}` }),
  archiveMarketplace: async (w, c) => ({ path: `/v1/marketplaces/${await marketplace(w, c)}/archive` }),
  restoreMarketplace: async (w, c) => {
    const id = await marketplace(w, c)
    await w.client.post(`/v1/marketplaces/${id}/archive`, { token: w.org.owner.token })
    return { path: `/v1/marketplaces/${id}/restore` }
  },
  listMarketplaceAccess: async (w, c) => ({ path: `/v1/marketplaces/${await marketplace(w, c)}/access` }),
  grantMarketplaceAccess: async (w, c) => ({
    path: `/v1/marketplaces/${await marketplace(w, c)}/access`,
    json: { memberId: w.org.admin.memberId, role: 'viewer' },
  }),
  revokeMarketplaceAccess: async (w, c) => {
    const base = `/v1/marketplaces/${await marketplace(w, c)}`
    return {
      path: `${base}/access/${await ok(w.client.post(`${base}/access`, { token: w.org.owner.token, json: { teamId: w.teamId, role: 'viewer' } }))}`,
    }
  },
  listMarketplacePlugins: async (w, c) => ({ path: `/v1/marketplaces/${await marketplace(w, c)}/plugins` }),
  addMarketplacePlugin: async (w, c) => ({
    path: `/v1/marketplaces/${await marketplace(w, c)}/plugins`,
    json: { pluginId: await plugin(w, c) },
  }),
  removeMarketplacePlugin: async (w, c) => {
    const id = await marketplace(w, c)
    const plg = await plugin(w, c)
    await w.client.post(`/v1/marketplaces/${id}/plugins`, { ...as(w, c), json: { pluginId: plg } })
    return { path: `/v1/marketplaces/${id}/plugins/${plg}` }
  },
  getResolvedMarketplace: async (w, c) => ({ path: `/v1/marketplaces/${await marketplace(w, c)}/resolved` }),
  listPluginAssignments: async (w, c) => ({ path: `/v1/plugins/${await plugin(w, c)}/assignments` }),
  assignPlugin: async (w, c) => ({ path: `/v1/plugins/${await plugin(w, c)}/assignments`, json: { teamId: w.teamId } }),
  unassignPlugin: async (w, c) => {
    const id = await plugin(w, c)
    const assignment = await ok(
      w.client.post(`/v1/plugins/${id}/assignments`, { ...as(w, c), json: { memberId: w.org.member.memberId } }),
    )
    return { path: `/v1/plugins/${id}/assignments/${assignment}` }
  },

  listSkills: async () => ({ path: '/v1/skills' }),
  createSkill: async (w) => ({ path: '/v1/skills', json: { skillMd: skillMd(`created-${w.seq()}`) } }),
  getSkill: async (w, c) => ({ path: `/v1/skills/${await object(w, c)}` }),
  listMySkills: async () => ({ path: '/v1/me/skills' }),
  listSkillHubs: async () => ({ path: '/v1/skill-hubs' }),
  createSkillHub: async (w) => ({ path: '/v1/skill-hubs', json: { name: `created hub ${w.seq()}` } }),
  getSkillHub: async (w, c) => ({ path: `/v1/skill-hubs/${await hub(w, c)}` }),
  updateSkillHub: async (w, c) => ({ path: `/v1/skill-hubs/${await hub(w, c)}`, json: { description: 'changed' } }),
  deleteSkillHub: async (w, c) => ({ path: `/v1/skill-hubs/${await hub(w, c)}` }),
  listSkillHubSkills: async (w, c) => ({ path: `/v1/skill-hubs/${await hub(w, c)}/skills` }),
  getResolvedSkillHub: async (w, c) => ({ path: `/v1/skill-hubs/${await hub(w, c)}/resolved` }),
  importSkillZip: async (w) => {
    const name = `zipped-${w.seq()}`
    return {
      path: '/v1/config-objects/import',
      body: zipSync({ [`${name}/SKILL.md`]: strToU8(skillMd(name)) }),
      headers: { 'content-type': 'application/zip' },
    }
  },
  addSkillHubSkill: async (w, c) => ({
    path: `/v1/skill-hubs/${await hub(w, c)}/skills`,
    json: { skillId: await object(w, c) },
  }),
  removeSkillHubSkill: async (w, c) => {
    const id = await hub(w, c)
    const skill = await object(w, c)
    await w.client.post(`/v1/skill-hubs/${id}/skills`, { ...as(w, c), json: { skillId: skill } })
    return { path: `/v1/skill-hubs/${id}/skills/${skill}` }
  },
  listSkillHubAssignments: async (w, c) => ({ path: `/v1/skill-hubs/${await hub(w, c)}/assignments` }),
  assignSkillHub: async (w, c) => ({
    path: `/v1/skill-hubs/${await hub(w, c)}/assignments`,
    json: { teamId: w.teamId },
  }),
  unassignSkillHub: async (w, c) => {
    const id = await hub(w, c)
    const assignment = await ok(
      w.client.post(`/v1/skill-hubs/${id}/assignments`, { ...as(w, c), json: { memberId: w.org.member.memberId } }),
    )
    return { path: `/v1/skill-hubs/${id}/assignments/${assignment}` }
  },
  listSkillHubAccess: async (w, c) => ({ path: `/v1/skill-hubs/${await hub(w, c)}/access` }),
  grantSkillHubAccess: async (w, c) => ({
    path: `/v1/skill-hubs/${await hub(w, c)}/access`,
    json: { teamId: w.teamId, role: 'viewer' },
  }),
  revokeSkillHubAccess: async (w, c) => {
    const base = `/v1/skill-hubs/${await hub(w, c)}`
    return { path: `${base}/access/${await grantOn(w, c, base)}` }
  },

  listProviderCatalog: async () => ({ path: '/v1/llm-provider-catalog' }),
  getCatalogProvider: async () => ({ path: '/v1/llm-provider-catalog/openai' }),
  listLlmProviders: async () => ({ path: '/v1/llm-providers' }),
  createLlmProvider: async (w) => ({
    path: '/v1/llm-providers',
    json: { name: `created provider ${w.seq()}`, catalogProviderId: 'groq', models: ['llama-3.3-70b-versatile'] },
  }),
  getLlmProvider: async (w, c) => ({ path: `/v1/llm-providers/${await provider(w, c)}` }),
  updateLlmProvider: async (w, c) => ({
    path: `/v1/llm-providers/${await provider(w, c)}`,
    json: { name: `renamed provider ${w.seq()}` },
  }),
  deleteLlmProvider: async (w, c) => ({ path: `/v1/llm-providers/${await provider(w, c)}` }),
  getLlmProviderCredential: async (w, c) => ({ path: `/v1/llm-providers/${await provider(w, c)}/credential` }),
  listLlmProviderAccess: async (w, c) => ({ path: `/v1/llm-providers/${await provider(w, c)}/access` }),
  grantLlmProviderAccess: async (w, c) => ({
    path: `/v1/llm-providers/${await provider(w, c)}/access`,
    json: { teamId: w.teamId, role: 'viewer' },
  }),
  revokeLlmProviderAccess: async (w, c) => {
    const base = `/v1/llm-providers/${await provider(w, c)}`
    return { path: `${base}/access/${await grantOn(w, c, base)}` }
  },
}

test('every catalog route answers each caller with the status the policy table implies', async () => {
  const t = await startTestControlPlane()
  try {
    const { failures, missing, checked } = await runRoleMatrix(t, { requests: REQUESTS, tags: TAGS })
    assert.equal(missing, [], 'every catalog route has a matrix entry')
    assert.equal(failures, [])
    const covered = t.app.contract.routes.filter((r) => (r.tags ?? []).some((tag) => TAGS.includes(tag)))
    assert.is(checked, covered.length * MATRIX_CALLERS.length)
    assert.ok(covered.length >= 70, `${covered.length} catalog routes`)
  } finally {
    await t.close()
  }
})

test.run()

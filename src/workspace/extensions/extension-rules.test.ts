import { assert, suite } from '../../../tests/harness.ts'
import { MASK, maskMcpConfig } from './mcp.ts'
import { pluginName } from './plugins.ts'
import { prepareSkill } from './skills.ts'

const test = suite('workspace/extension-rules')

test('plugin specs reduce to their package name', () => {
  assert.is(pluginName('@scope/name@1.2.3'), '@scope/name')
  assert.is(pluginName('@scope/name'), '@scope/name')
  assert.is(pluginName('name@latest'), 'name')
  assert.is(pluginName('file:///tmp/p.ts'), 'file:///tmp/p.ts')
  assert.is(pluginName('https://x.example/p.js'), 'https://x.example/p.js')
  assert.is(pluginName('/abs/plugin.ts'), '/abs/plugin.ts')
})

test('a skill payload without frontmatter gets one built from the payload', async () => {
  const skill = await prepareSkill({ name: 'ok-name', content: 'Just a body.', description: 'From the payload.' })
  assert.is(skill.text, '---\nname: ok-name\ndescription: From the payload.\n---\n\nJust a body.\n')
  assert.is(skill.rel, '.opencode/skills/ok-name/SKILL.md')
})

test('MCP masking hides header and environment values, OAuth secrets and URL credentials', () => {
  const masked = maskMcpConfig({
    type: 'remote',
    url: 'https://user:pw@mcp.example/x',
    headers: { Authorization: 'Bearer s' },
    environment: { K: 'v' },
    oauth: { clientId: 'id', clientSecret: 's2' },
    enabled: true,
  })
  assert.equal(masked.headers, { Authorization: MASK })
  assert.equal(masked.environment, { K: MASK })
  assert.equal(masked.oauth, { clientId: 'id', clientSecret: MASK })
  assert.not.ok(String(masked.url).includes('pw'))
  assert.is(masked.enabled, true)
})

test.run()

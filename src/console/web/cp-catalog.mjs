// Model providers (keys entered once, never shown again) and plugins with marketplaces.
import { pluginAssignments } from './cp-delivery.mjs'
import { all, pagedList } from './cp-org.mjs'
import { announce, errorBox, field, h, mount, section, showFieldErrors } from './dom.mjs'

/** Replaces (or first stores) a provider's key; like the first one, it is never shown again. */
function keyForm(api, provider, reload) {
  const key = h('input', { name: 'apiKey', type: 'password', autocomplete: 'off' })
  const status = h('div', { 'aria-live': 'polite' })
  const form = h(
    'form',
    {
      class: 'row',
      novalidate: true,
      onsubmit: async (event) => {
        event.preventDefault()
        if (!key.value) return mount(status, errorBox({ message: 'Enter the new key first.' }))
        try {
          await api.patch(`/v1/llm-providers/${provider.id}`, { apiKey: key.value })
          key.value = ''
          announce(`Key of ${provider.name} replaced`)
          await reload()
        } catch (error) {
          showFieldErrors(form, error)
          mount(status, errorBox(error))
        }
      },
    },
    field(provider.hasApiKey ? `Replacement key for ${provider.name}` : `Key for ${provider.name}`, key),
    h('button', { type: 'submit' }, provider.hasApiKey ? 'Replace key' : 'Store key'),
    status,
  )
  return form
}

/** The providers page. */
export function providersPage({ api, can, me }) {
  const status = h('div', { 'aria-live': 'polite' })
  // Per-provider grants decide for members; a member is offered the controls of providers they created.
  const mayManage = (p) =>
    can('llm_providers.write') && (me.member?.role !== 'member' || p.createdByMemberId === me.member?.id)
  const providers = pagedList(api, '/v1/llm-providers', {
    label: 'Model providers',
    listClass: 'cards',
    empty: 'No model providers yet.',
    render: (p) =>
      h(
        'li',
        { class: 'card' },
        h('h3', null, p.name),
        h(
          'p',
          { class: 'row' },
          h('span', { class: 'pill' }, p.source === 'catalog' ? `catalog: ${p.catalogProviderId}` : 'custom'),
          h('span', { class: `pill ${p.hasApiKey ? 'ok' : ''}` }, p.hasApiKey ? 'key stored' : 'no key'),
          p.baseUrl ? h('code', null, p.baseUrl) : null,
        ),
        h(
          'p',
          { class: 'small' },
          'Model ids: ',
          p.models.length
            ? p.models.map((m, i) => [
                i ? ', ' : '',
                h('code', null, m.id),
                m.name && m.name !== m.id ? ` (${m.name})` : '',
              ])
            : h('span', { class: 'muted' }, 'none'),
        ),
        mayManage(p) ? keyForm(api, p, load) : null,
        mayManage(p)
          ? h(
              'button',
              {
                type: 'button',
                class: 'danger',
                'aria-label': `Delete ${p.name}`,
                onclick: async () => {
                  if (!confirm(`Delete the provider ${p.name}?`)) return
                  try {
                    await api.del(`/v1/llm-providers/${p.id}`)
                    announce(`${p.name} deleted`)
                    await load()
                  } catch (error) {
                    mount(status, errorBox(error))
                  }
                },
              },
              'Delete',
            )
          : null,
      ),
  })
  const load = () => providers.reload()
  let form = null
  if (can('llm_providers.write')) {
    const createStatus = h('div', { 'aria-live': 'polite' })
    const catalog = h('select', { name: 'catalogProviderId' })
    const name = h('input', { name: 'name', type: 'text', autocomplete: 'off' })
    const models = h('input', { name: 'models', type: 'text', autocomplete: 'off' })
    const apiKey = h('input', { name: 'apiKey', type: 'password', autocomplete: 'off' })
    let entries = []
    const fill = () => {
      const chosen = entries.find((c) => c.id === catalog.value)
      if (!chosen) return
      if (!name.value) name.value = chosen.name
      models.value = chosen.models.map((m) => m.id).join(', ')
    }
    catalog.addEventListener('change', () => {
      name.value = ''
      fill()
    })
    void (async () => {
      try {
        entries = await all(api, '/v1/llm-provider-catalog')
        mount(
          catalog,
          entries.map((c) => h('option', { value: c.id }, c.name)),
        )
        fill()
      } catch (error) {
        mount(createStatus, errorBox(error))
      }
    })()
    form = h(
      'form',
      {
        class: 'card',
        novalidate: true,
        onsubmit: async (event) => {
          event.preventDefault()
          try {
            const body = {
              name: name.value,
              catalogProviderId: catalog.value,
              models: models.value
                .split(',')
                .map((m) => m.trim())
                .filter(Boolean),
            }
            // Sent once; the API stores it encrypted and answers only `hasApiKey` from now on.
            if (apiKey.value) body.apiKey = apiKey.value
            await api.post('/v1/llm-providers', body)
            apiKey.value = ''
            showFieldErrors(form, null)
            mount(createStatus, h('p', { role: 'status' }, `Added ${body.name}. The key will not be shown again.`))
            await load()
          } catch (error) {
            showFieldErrors(form, error)
            mount(createStatus, errorBox(error))
          }
        },
      },
      h(
        'div',
        { class: 'grid' },
        field('Provider', catalog),
        field('Name', name),
        field('Models', models, 'Model ids, separated by commas.'),
        field('API key', apiKey, 'Stored encrypted; never shown again.'),
      ),
      h('button', { type: 'submit', class: 'primary' }, 'Add provider'),
      createStatus,
    )
  }
  void load()
  return {
    node: h(
      'div',
      null,
      h('h1', null, 'Model providers'),
      form ? section('Add a provider', form) : null,
      status,
      section('Providers', providers.node),
    ),
  }
}

/** A plugin or marketplace card: its members, with add and remove when the caller manages it. */
function containerCard(api, container, kind, manage, candidates) {
  const body = h('div', { 'aria-live': 'polite' })
  const memberPath =
    kind === 'plugin' ? `/v1/plugins/${container.id}/config-objects` : `/v1/marketplaces/${container.id}/plugins`
  const load = async () => {
    try {
      const members = await all(api, memberPath)
      const idOf = (m) => (kind === 'plugin' ? m.configObjectId : m.pluginId)
      const titleOf = (m) => (kind === 'plugin' ? `${m.configObject.title} (${m.configObject.type})` : m.plugin.name)
      const present = new Set(members.map(idOf))
      const pick = h(
        'select',
        { 'aria-label': `${kind === 'plugin' ? 'Config object' : 'Plugin'} to add to ${container.name}` },
        candidates.filter((c) => !present.has(c.id)).map((c) => h('option', { value: c.id }, c.title ?? c.name)),
      )
      mount(
        body,
        h(
          'ul',
          { class: 'plain' },
          members.length
            ? members.map((m) => h('li', null, titleOf(m)))
            : h('li', { class: 'muted' }, kind === 'plugin' ? 'No config objects yet.' : 'No plugins yet.'),
        ),
        manage && pick.options.length
          ? h(
              'div',
              { class: 'row' },
              pick,
              h(
                'button',
                {
                  type: 'button',
                  onclick: async () => {
                    try {
                      await api.post(
                        memberPath,
                        kind === 'plugin' ? { configObjectId: pick.value } : { pluginId: pick.value },
                      )
                      announce(`Added to ${container.name}`)
                      await load()
                    } catch (error) {
                      mount(body, errorBox(error))
                    }
                  },
                },
                `Add to ${container.name}`,
              ),
            )
          : null,
      )
    } catch (error) {
      mount(body, errorBox(error))
    }
  }
  void load()
  return h(
    'li',
    { class: 'card' },
    h('h3', null, container.name),
    h(
      'p',
      { class: 'muted small' },
      `${container.status}${container.description ? ` · ${container.description}` : ''}`,
    ),
    body,
    kind === 'plugin' ? pluginAssignments(api, container, manage) : null,
  )
}

/** The plugins and marketplaces page. */
export function pluginsPage({ api, can, me }) {
  const mayManage = (c, write) => can(write) && (me.member?.role !== 'member' || c.createdByMemberId === me.member?.id)
  // What the cards' pickers offer: every config object (for a plugin) and every plugin (for a marketplace).
  let objects = []
  let everyPlugin = []
  const status = h('div', { 'aria-live': 'polite' })
  const plugins = pagedList(api, '/v1/plugins', {
    label: 'Plugins',
    listClass: 'cards',
    empty: 'No plugins yet.',
    render: (p) => containerCard(api, p, 'plugin', mayManage(p, 'plugins.write'), objects),
  })
  const markets = pagedList(api, '/v1/marketplaces', {
    label: 'Marketplaces',
    listClass: 'cards',
    empty: 'No marketplaces yet.',
    render: (m) => containerCard(api, m, 'marketplace', mayManage(m, 'marketplaces.write'), everyPlugin),
  })
  const load = async () => {
    try {
      ;[everyPlugin, objects] = await Promise.all([
        can('marketplaces.write') ? all(api, '/v1/plugins') : Promise.resolve([]),
        can('config_objects.read') && can('plugins.write') ? all(api, '/v1/config-objects') : Promise.resolve([]),
      ])
      mount(status)
    } catch (error) {
      mount(status, errorBox(error))
    }
    await plugins.reload()
    if (can('marketplaces.read')) await markets.reload()
  }
  const createForm = (kind, path) => {
    const status = h('div', { 'aria-live': 'polite' })
    const name = h('input', { name: 'name', type: 'text', autocomplete: 'off' })
    const form = h(
      'form',
      {
        class: 'card',
        novalidate: true,
        onsubmit: async (event) => {
          event.preventDefault()
          try {
            await api.post(path, { name: name.value })
            showFieldErrors(form, null)
            mount(status)
            name.value = ''
            announce(`${kind} created`)
            await load()
          } catch (error) {
            showFieldErrors(form, error)
            mount(status, errorBox(error))
          }
        },
      },
      field(`${kind} name`, name),
      h('button', { type: 'submit', class: 'primary' }, `Create ${kind.toLowerCase()}`),
      status,
    )
    return form
  }
  void load()
  return {
    node: h(
      'div',
      null,
      h('h1', null, 'Plugins'),
      status,
      section('Plugins', can('plugins.write') ? createForm('Plugin', '/v1/plugins') : null, plugins.node),
      can('marketplaces.read')
        ? section(
            'Marketplaces',
            can('marketplaces.create') ? createForm('Marketplace', '/v1/marketplaces') : null,
            markets.node,
          )
        : null,
    ),
  }
}

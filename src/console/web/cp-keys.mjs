// API keys: create (the key shown once), list, revoke.
import { pagedTable } from './cp-org.mjs'
import { announce, errorBox, field, h, mount, section, shownOnce, showFieldErrors, when } from './dom.mjs'

/** The API keys page. */
export function keysPage({ api, can }) {
  const created = h('div', { 'aria-live': 'polite' })
  const table = pagedTable(
    api,
    '/v1/api-keys',
    'API keys',
    ['Name', 'Starts with', 'Role', 'Status', 'Expires', 'Last used', ''],
    (key) => [
      h('strong', null, key.name),
      h('code', null, `${key.start}…`),
      h('span', { class: 'pill' }, key.role),
      key.disabledReason ? `${key.status} (${key.disabledReason.replace('_', ' ')})` : key.status,
      key.expiresAt ? when(key.expiresAt) : 'never',
      when(key.lastUsedAt),
      can('api_keys.manage')
        ? h(
            'button',
            {
              type: 'button',
              class: 'danger',
              'aria-label': `Revoke ${key.name}`,
              onclick: async () => {
                if (!confirm(`Revoke ${key.name}? Programs using it stop working at once.`)) return
                try {
                  await api.del(`/v1/api-keys/${key.id}`)
                  announce('Key revoked')
                  await table.reload()
                } catch (error) {
                  mount(table.status, errorBox(error))
                }
              },
            },
            'Revoke',
          )
        : '',
    ],
  )
  let form = null
  if (can('api_keys.manage')) {
    const name = h('input', { name: 'name', type: 'text', required: true, autocomplete: 'off', maxlength: '64' })
    const expires = h('input', { name: 'expiresAt', type: 'date' })
    form = h(
      'form',
      {
        class: 'card',
        novalidate: true,
        onsubmit: async (event) => {
          event.preventDefault()
          mount(created)
          try {
            const body = { name: name.value }
            if (expires.value) body.expiresAt = new Date(`${expires.value}T00:00:00`).toISOString()
            const result = await api.post('/v1/api-keys', body)
            showFieldErrors(form, null)
            mount(created, shownOnce(`API key ${result.item.name}`, result.key))
            name.value = ''
            expires.value = ''
            await table.reload()
          } catch (error) {
            showFieldErrors(form, error)
            mount(created, errorBox(error))
          }
        },
      },
      h('div', { class: 'grid' }, field('Name', name), field('Expires on', expires, 'Leave empty for no expiry.')),
      h('button', { type: 'submit', class: 'primary' }, 'Create key'),
    )
  }
  return {
    node: h(
      'div',
      null,
      h('h1', null, 'API keys'),
      form ? section('Create a key', form, created) : null,
      section('Keys', table.node),
    ),
  }
}

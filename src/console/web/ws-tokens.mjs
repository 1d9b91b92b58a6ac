// Issued tokens: list, issue (value shown once), revoke.
import { announce, errorBox, field, h, mount, scroller, section, shownOnce, when } from './dom.mjs'

const TTL_CHOICES = [
  ['', 'Never'],
  [String(3600), '1 hour'],
  [String(24 * 3600), '1 day'],
  [String(7 * 24 * 3600), '7 days'],
  [String(30 * 24 * 3600), '30 days'],
  [String(365 * 24 * 3600), '1 year'],
]

/** The tokens page. */
export function tokensPage(api) {
  const table = h('div')
  const created = h('div', { 'aria-live': 'polite' })
  const listStatus = h('div', { 'aria-live': 'polite' })
  /** The id of the token whose value is shown once above the list, if any. */
  let shownId = null

  const load = async () => {
    try {
      const { items } = await api.get('/tokens')
      mount(listStatus)
      if (!items.length) return mount(table, h('p', { class: 'muted' }, 'No tokens issued yet.'))
      mount(
        table,
        scroller(
          'Issued tokens',
          h(
            'table',
            null,
            h('caption', { class: 'visually-hidden' }, 'Issued tokens'),
            h(
              'thead',
              null,
              h(
                'tr',
                null,
                ['Label', 'Scope', 'Created', 'Expires', 'Last used', ''].map((title) =>
                  h('th', { scope: 'col' }, title || h('span', { class: 'visually-hidden' }, 'Actions')),
                ),
              ),
            ),
            h(
              'tbody',
              null,
              items.map((token) =>
                h(
                  'tr',
                  null,
                  h('td', null, token.label ?? h('span', { class: 'muted' }, token.id)),
                  h('td', null, h('span', { class: 'pill' }, token.scope)),
                  h('td', null, when(token.createdAt)),
                  h('td', null, token.expiresAt ? when(token.expiresAt) : 'never'),
                  h('td', null, when(token.lastUsedAt)),
                  h(
                    'td',
                    null,
                    h(
                      'button',
                      {
                        type: 'button',
                        class: 'danger',
                        'aria-label': `Revoke ${token.label ?? token.id}`,
                        onclick: async () => {
                          if (!confirm(`Revoke ${token.label ?? token.id}? Clients using it stop working at once.`))
                            return
                          try {
                            await api.del(`/tokens/${encodeURIComponent(token.id)}`)
                            announce('Token revoked')
                            // A revoked value is of no use to copy: take it off the screen.
                            if (token.id === shownId) {
                              shownId = null
                              mount(created, h('p', { role: 'status' }, 'The token shown here was revoked.'))
                            }
                            await load()
                          } catch (error) {
                            mount(listStatus, errorBox(error))
                          }
                        },
                      },
                      'Revoke',
                    ),
                  ),
                ),
              ),
            ),
          ),
        ),
      )
    } catch (error) {
      mount(listStatus, errorBox(error))
    }
  }

  const scope = h(
    'select',
    null,
    ['viewer', 'collaborator', 'owner'].map((value) => h('option', { value }, value)),
  )
  const label = h('input', { type: 'text', maxlength: '200', autocomplete: 'off' })
  const ttl = h(
    'select',
    null,
    TTL_CHOICES.map(([value, text]) => h('option', { value }, text)),
  )
  const form = h(
    'form',
    {
      class: 'card',
      onsubmit: async (event) => {
        event.preventDefault()
        mount(created)
        shownId = null
        try {
          const body = { scope: scope.value }
          if (label.value.trim()) body.label = label.value.trim()
          if (ttl.value) body.ttlSeconds = Number(ttl.value)
          const token = await api.post('/tokens', body)
          mount(created, shownOnce('New token', token.token))
          shownId = token.id
          label.value = ''
          announce('Token issued')
          await load()
        } catch (error) {
          mount(created, errorBox(error))
        }
      },
    },
    h(
      'div',
      { class: 'grid' },
      field('Scope', scope, 'viewer reads; collaborator writes; owner also manages the server.'),
      field('Label', label, 'Who or what uses it.'),
      field('Expires after', ttl),
    ),
    h('button', { type: 'submit', class: 'primary' }, 'Issue token'),
  )
  void load()
  return {
    node: h(
      'div',
      null,
      h('h1', null, 'Tokens'),
      section('Issue a token', form, created),
      section('Issued tokens', listStatus, table),
    ),
  }
}

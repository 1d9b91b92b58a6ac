// Sign-ins of other programs: approve a device sign-in (#device=CODE), consent to an MCP client
// (#consent=ID), and the OAuth tokens page (yours, and the organization's for admins).
import { all, pagedTable } from './cp-org.mjs'
import { announce, errorBox, field, h, mount, section, when } from './dom.mjs'

/** The organization picker: every organization of the caller, the active one first. */
function orgPicker(api, me) {
  const select = h('select', { name: 'orgId' })
  void all(api, '/v1/me/orgs')
    .then((orgs) => {
      mount(
        select,
        orgs.map((org) => h('option', { value: org.id, selected: org.id === me.organization?.id }, org.name)),
      )
    })
    .catch(() => {})
  return select
}

function scopeList(scopes) {
  return h(
    'ul',
    { class: 'plain' },
    scopes.map((s) => h('li', null, h('code', null, s.scope), ` — ${s.description}`)),
  )
}

/** A decision card: what asks, for what, in which organization, with Approve and Deny. */
function decisionCard({ api, me, title, facts, scopes, approve, deny }) {
  const status = h('div', { 'aria-live': 'polite' })
  const org = orgPicker(api, me)
  const buttons = []
  const act = (fn, busy) => async () => {
    for (const b of buttons) b.disabled = true
    mount(status, h('p', { class: 'muted' }, busy))
    try {
      await fn(org.value || undefined, status)
    } catch (error) {
      for (const b of buttons) b.disabled = false
      mount(status, errorBox(error))
    }
  }
  buttons.push(
    h('button', { type: 'button', class: 'primary', onclick: act(approve, 'Approving…') }, 'Approve'),
    h('button', { type: 'button', class: 'danger', onclick: act(deny, 'Denying…') }, 'Deny'),
  )
  return h(
    'div',
    { class: 'card' },
    h('h2', null, title),
    h(
      'dl',
      null,
      facts.map(([term, value]) => [h('dt', null, term), h('dd', null, value)]),
    ),
    h('h3', null, 'It may'),
    scopeList(scopes),
    field('For organization', org, 'The token acts as you, in this organization only, and you can revoke it any time.'),
    h('div', { class: 'row' }, buttons),
    status,
  )
}

/** Approve or deny a device sign-in; `code` comes from `#device=CODE`. */
export function devicePage({ api, me }, code) {
  const result = h('div', { 'aria-live': 'polite' })
  const input = h('input', {
    name: 'userCode',
    type: 'text',
    required: true,
    autocomplete: 'off',
    autocapitalize: 'characters',
    spellcheck: 'false',
    maxlength: '16',
    value: code ?? '',
  })
  const lookup = async () => {
    mount(result, h('p', { class: 'muted' }, 'Looking up the code…'))
    try {
      const userCode = input.value.trim()
      const request = await api.get(`/v1/oauth/device?userCode=${encodeURIComponent(userCode)}`)
      mount(
        result,
        decisionCard({
          api,
          me,
          title: `${request.client.name} asks to sign in as you`,
          facts: [
            ['Program', request.client.name],
            ['Code', h('code', null, request.userCode)],
            ['Expires', when(request.expiresAt)],
          ],
          scopes: request.scopes,
          approve: async (orgId) => {
            const done = await api.post('/v1/oauth/device/approve', { userCode, ...(orgId ? { orgId } : {}) })
            mount(
              result,
              h(
                'p',
                { class: 'card', role: 'status' },
                `Approved: ${done.client.name} is signed in to ${done.organization.name}. You can close this page.`,
              ),
            )
            announce('Sign-in approved')
          },
          deny: async () => {
            await api.post('/v1/oauth/device/deny', { userCode })
            mount(result, h('p', { class: 'card', role: 'status' }, 'Denied: the program was told no.'))
            announce('Sign-in denied')
          },
        }),
      )
    } catch (error) {
      mount(result, errorBox(error))
    }
  }
  const form = h(
    'form',
    {
      class: 'card',
      novalidate: true,
      onsubmit: (event) => {
        event.preventDefault()
        void lookup()
      },
    },
    field('Code shown by the program', input, 'Like BCDF-GHJK; letters only, case does not matter.'),
    h('button', { type: 'submit' }, 'Continue'),
  )
  if (code) void lookup()
  return { node: h('div', null, h('h1', null, 'Sign in a program'), form, result) }
}

/** Consent to an MCP client's authorization request `#consent=ID`. */
export function consentPage({ api, me }, id) {
  const body = h('div', { 'aria-live': 'polite' }, h('p', { class: 'muted' }, 'Loading…'))
  void (async () => {
    try {
      const request = await api.get(`/v1/oauth/authorizations/${encodeURIComponent(id ?? '')}`)
      const go = (decision) => {
        location.href = decision.redirectTo
      }
      mount(
        body,
        decisionCard({
          api,
          me,
          title: `${request.client.name} asks for access`,
          facts: [
            ['Client', request.client.name],
            ['Returns to', new URL(request.redirectUri).origin],
            ['For the server', request.resource ?? 'any of this organization’s APIs'],
          ],
          scopes: request.scopes,
          approve: async (orgId, status) => {
            const decision = await api.post(`/v1/oauth/authorizations/${request.id}/approve`, orgId ? { orgId } : {})
            mount(status, h('p', { role: 'status' }, `Approved; returning to ${request.client.name}…`))
            go(decision)
          },
          deny: async (_orgId, status) => {
            const decision = await api.post(`/v1/oauth/authorizations/${request.id}/deny`)
            mount(status, h('p', { role: 'status' }, `Denied; returning to ${request.client.name}…`))
            go(decision)
          },
        }),
      )
    } catch (error) {
      mount(body, errorBox(error))
    }
  })()
  return { node: h('div', null, h('h1', null, 'Allow access'), body) }
}

function tokenTable(api, path, caption, canRevoke, revokePath) {
  const table = pagedTable(
    api,
    path,
    caption,
    ['Program', 'Scopes', 'Status', 'Created', 'Expires', 'Last used', ''],
    (token) => [
      h('strong', null, token.clientName),
      token.scopes.join(' '),
      token.revokedReason ? `${token.status} (${token.revokedReason.replace('_', ' ')})` : token.status,
      when(token.createdAt),
      when(token.expiresAt),
      when(token.lastUsedAt),
      canRevoke && token.status === 'active'
        ? h(
            'button',
            {
              type: 'button',
              class: 'danger',
              'aria-label': `Revoke ${token.clientName} token from ${when(token.createdAt)}`,
              onclick: async () => {
                if (!confirm(`Revoke this ${token.clientName} token? It stops working at once.`)) return
                try {
                  await api.del(`${revokePath}/${token.id}`)
                  announce('Token revoked')
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
  return table
}

/** OAuth tokens: yours, and (admins) the organization's. */
export function tokensPage({ api, can }) {
  const mine = tokenTable(api, '/v1/me/oauth-tokens', 'Your OAuth tokens', true, '/v1/me/oauth-tokens')
  const everyone = can('oauth_tokens.read')
    ? tokenTable(api, '/v1/oauth-tokens', 'Organization OAuth tokens', can('oauth_tokens.manage'), '/v1/oauth-tokens')
    : null
  return {
    node: h(
      'div',
      null,
      h('h1', null, 'OAuth tokens'),
      h(
        'p',
        { class: 'muted' },
        'Programs you signed in (OpenCode, the CLI, linked workspaces, MCP clients). Long-lived tokens show when they expire.',
      ),
      section('Yours', mine.node),
      everyone ? section('Everyone in the organization', everyone.node) : null,
    ),
  }
}

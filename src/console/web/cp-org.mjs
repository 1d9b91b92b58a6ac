// Organization pages: members, invitations and teams. Lists page with the API's keyset cursor.
import { withQuery } from './api.mjs'
import { announce, errorBox, field, h, mount, scroller, section, shownOnce, showFieldErrors, when } from './dom.mjs'

/** Everything in the list at `path` (pages of 50, the API's maximum), for pickers. */
export async function all(api, path) {
  const items = []
  let cursor = null
  do {
    const page = await api.get(withQuery(path, { limit: 50, cursor }))
    items.push(...page.items)
    cursor = page.nextCursor
  } while (cursor && items.length < 1000)
  return items
}

/**
 * A table over a `{items, nextCursor}` list: loads a page, and "Load more" passes `nextCursor`
 * back as `cursor`. `row(item)` returns the cells; `reload()` starts over.
 */
export function pagedTable(api, path, caption, headings, row) {
  const body = h('tbody')
  const status = h('div', { 'aria-live': 'polite' })
  const more = h('button', { type: 'button', hidden: true }, 'Load more')
  let cursor = null
  const load = async (reset) => {
    if (reset) {
      cursor = null
      body.replaceChildren()
    }
    more.disabled = true
    try {
      const page = await api.get(withQuery(path, { limit: 50, cursor }))
      for (const item of page.items)
        body.append(
          h(
            'tr',
            null,
            row(item).map((cell) => h('td', null, cell)),
          ),
        )
      if (!body.children.length)
        body.append(
          h('tr', null, h('td', { colspan: String(headings.length), class: 'muted' }, `No ${caption.toLowerCase()}.`)),
        )
      cursor = page.nextCursor
      more.hidden = !cursor
      mount(status)
    } catch (error) {
      mount(status, errorBox(error))
    } finally {
      more.disabled = false
    }
  }
  more.addEventListener('click', () => load(false))
  void load(true)
  const node = h(
    'div',
    null,
    status,
    scroller(
      caption,
      h(
        'table',
        null,
        h('caption', { class: 'visually-hidden' }, caption),
        h(
          'thead',
          null,
          h(
            'tr',
            null,
            headings.map((title) => h('th', { scope: 'col' }, title)),
          ),
        ),
        body,
      ),
    ),
    more,
  )
  return { node, reload: () => load(true), status }
}

/**
 * A list (`ul`) over a `{items, nextCursor}` list, 20 at a time: "Show more" passes `nextCursor`
 * back as `cursor`. `render(item)` returns the `li`; `reload()` starts over.
 */
export function pagedList(api, path, { label, listClass, render, empty }) {
  const list = h('ul', { class: listClass, 'aria-label': label }, h('li', { class: 'muted' }, 'Loading…'))
  const more = h('button', { type: 'button', hidden: true }, `Show more ${label.toLowerCase()}`)
  let cursor = null
  const load = async (reset) => {
    more.disabled = true
    try {
      const page = await api.get(withQuery(path, { limit: 20, cursor: reset ? null : cursor }))
      if (reset) list.replaceChildren()
      list.append(...page.items.map(render))
      if (!list.children.length) list.append(h('li', { class: 'muted' }, empty))
      cursor = page.nextCursor
      more.hidden = !cursor
    } catch (error) {
      if (reset) list.replaceChildren()
      list.append(h('li', null, errorBox(error)))
    } finally {
      more.disabled = false
    }
  }
  more.addEventListener('click', () => load(false))
  return { node: h('div', null, list, more), reload: () => load(true) }
}

/** Runs an action from a table row; its failure (a 403 included) shows above the table. */
async function act(table, fn, done) {
  try {
    await fn()
    announce(done)
    await table.reload()
  } catch (error) {
    mount(table.status, errorBox(error))
  }
}

/** Members: role changes and removal where the role allows. */
export function membersPage({ api, me, can }) {
  const table = pagedTable(api, '/v1/members', 'Members', ['Name', 'Email', 'Role', 'Since', ''], (m) => {
    const self = m.id === me.member?.id
    const actions = []
    if (can('members.update_role') && m.role !== 'owner' && !self) {
      const target = m.role === 'admin' ? 'member' : 'admin'
      actions.push(
        h(
          'button',
          {
            type: 'button',
            onclick: () =>
              act(table, () => api.patch(`/v1/members/${m.id}`, { role: target }), `${m.name} is now ${target}`),
          },
          `Make ${target}`,
        ),
      )
    }
    if (can('members.remove') && m.role !== 'owner' && !self) {
      actions.push(
        h(
          'button',
          {
            type: 'button',
            class: 'danger',
            'aria-label': `Remove ${m.name}`,
            onclick: () => {
              if (confirm(`Remove ${m.name} from the organization?`))
                void act(table, () => api.del(`/v1/members/${m.id}`), `${m.name} removed`)
            },
          },
          'Remove',
        ),
      )
    }
    return [
      h('strong', null, m.name),
      m.email,
      h('span', { class: 'pill' }, m.role),
      when(m.createdAt),
      h('div', { class: 'row' }, actions),
    ]
  })
  return { node: h('div', null, h('h1', null, 'Members'), table.node) }
}

/** How often the invitations page checks whether a pending invitation was accepted elsewhere. */
const INVITATION_CHECK_MS = 4000

/** Invitations: create (link shown once), list, cancel; accepted ones leave "pending" without a reload. */
export function invitationsPage({ api, can }) {
  const created = h('div', { 'aria-live': 'polite' })
  // Invitations are accepted in the invitee's browser and the change feed does not carry them:
  // while some show as pending, check every few seconds (and when the tab is shown again) and
  // re-read the list only when one of them is no longer pending.
  const shownPending = new Set()
  const invitationRow = (inv) => [
    inv.email,
    h('span', { class: 'pill' }, inv.role),
    inv.status,
    when(inv.expiresAt),
    inv.status === 'pending' && can('invitations.manage')
      ? h(
          'button',
          {
            type: 'button',
            class: 'danger',
            'aria-label': `Cancel the invitation for ${inv.email}`,
            onclick: () => act(table, () => api.post(`/v1/invitations/${inv.id}/cancel`), 'Invitation canceled'),
          },
          'Cancel',
        )
      : '',
  ]
  const table = pagedTable(api, '/v1/invitations', 'Invitations', ['Email', 'Role', 'Status', 'Expires', ''], (inv) => {
    if (inv.status === 'pending') shownPending.add(inv.id)
    return invitationRow(inv)
  })
  const check = async () => {
    if (!shownPending.size || document.hidden) return
    try {
      const still = new Set((await all(api, '/v1/invitations?status=pending')).map((inv) => inv.id))
      if (![...shownPending].some((id) => !still.has(id))) return
      shownPending.clear()
      await table.reload()
      announce('Invitations updated')
    } catch {
      // A failed check changes nothing on screen; the next one tries again.
    }
  }
  const timer = setInterval(() => void check(), INVITATION_CHECK_MS)
  const onVisible = () => void check()
  document.addEventListener('visibilitychange', onVisible)
  let form = null
  if (can('invitations.manage')) {
    const email = h('input', { name: 'email', type: 'email', required: true, autocomplete: 'off' })
    const role = h(
      'select',
      { name: 'role' },
      ['member', 'admin'].map((value) => h('option', { value }, value)),
    )
    form = h(
      'form',
      {
        class: 'card',
        novalidate: true,
        onsubmit: async (event) => {
          event.preventDefault()
          mount(created)
          try {
            const result = await api.post('/v1/invitations', { email: email.value, role: role.value })
            // The link carries the token in its fragment: it is never sent to a server when opened.
            const link = `${location.origin}/console/#invite=${encodeURIComponent(result.token)}`
            showFieldErrors(form, null)
            mount(created, shownOnce(`Invitation link for ${result.item.email}`, link))
            email.value = ''
            await table.reload()
          } catch (error) {
            showFieldErrors(form, error)
            mount(created, errorBox(error))
          }
        },
      },
      h('div', { class: 'grid' }, field('Email', email), field('Role', role)),
      h('button', { type: 'submit', class: 'primary' }, 'Invite'),
    )
  }
  return {
    node: h(
      'div',
      null,
      h('h1', null, 'Invitations'),
      form ? section('Invite someone', form, created) : null,
      section('Sent', table.node),
    ),
    dispose() {
      clearInterval(timer)
      document.removeEventListener('visibilitychange', onVisible)
    },
  }
}

/** A team's members, loaded when opened; with `manage`, add and remove. */
function teamMembers(api, team, manage) {
  const body = h('div', { 'aria-live': 'polite' })
  const count = (n) => `${n} member${n === 1 ? '' : 's'}`
  const summary = h('summary', null, count(team.memberCount))
  const details = h('details', null, summary, body)
  const load = async () => {
    try {
      const [inTeam, everyone] = await Promise.all([
        all(api, `/v1/teams/${team.id}/members`),
        manage ? all(api, '/v1/members') : Promise.resolve([]),
      ])
      // The count follows every add and remove, not only the list's first read.
      summary.textContent = count(inTeam.length)
      const ids = new Set(inTeam.map((m) => m.id))
      const others = everyone.filter((m) => !ids.has(m.id))
      const pick = h(
        'select',
        { 'aria-label': `Member to add to ${team.name}` },
        others.map((m) => h('option', { value: m.id }, `${m.name} (${m.email})`)),
      )
      mount(
        body,
        h(
          'ul',
          { class: 'plain' },
          inTeam.length
            ? inTeam.map((m) =>
                h(
                  'li',
                  { class: 'row' },
                  m.name,
                  manage
                    ? h(
                        'button',
                        {
                          type: 'button',
                          'aria-label': `Remove ${m.name} from ${team.name}`,
                          onclick: async () => {
                            try {
                              await api.del(`/v1/teams/${team.id}/members/${m.id}`)
                              announce(`${m.name} left ${team.name}`)
                              await load()
                            } catch (error) {
                              mount(body, errorBox(error))
                            }
                          },
                        },
                        'Remove',
                      )
                    : null,
                ),
              )
            : h('li', { class: 'muted' }, 'Nobody yet.'),
        ),
        manage && others.length
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
                      await api.post(`/v1/teams/${team.id}/members`, { memberId: pick.value })
                      announce(`Added to ${team.name}`)
                      await load()
                    } catch (error) {
                      mount(body, errorBox(error))
                    }
                  },
                },
                `Add to ${team.name}`,
              ),
            )
          : null,
      )
    } catch (error) {
      mount(body, errorBox(error))
    }
  }
  details.addEventListener('toggle', () => {
    if (details.open) void load()
  })
  return details
}

/** Teams: list and create. */
export function teamsPage({ api, can }) {
  const status = h('div', { 'aria-live': 'polite' })
  const table = pagedTable(api, '/v1/teams', 'Teams', ['Name', 'Description', 'Members', ''], (team) => [
    h('strong', null, team.name),
    team.description ?? '',
    teamMembers(api, team, can('teams.manage')),
    can('teams.manage')
      ? h(
          'button',
          {
            type: 'button',
            class: 'danger',
            'aria-label': `Delete team ${team.name}`,
            onclick: () => {
              if (confirm(`Delete the team ${team.name}?`))
                void act(table, () => api.del(`/v1/teams/${team.id}`), 'Team deleted')
            },
          },
          'Delete',
        )
      : '',
  ])
  let form = null
  if (can('teams.manage')) {
    const name = h('input', { name: 'name', type: 'text', required: true, autocomplete: 'off' })
    const description = h('input', { name: 'description', type: 'text', autocomplete: 'off' })
    form = h(
      'form',
      {
        class: 'card',
        novalidate: true,
        onsubmit: async (event) => {
          event.preventDefault()
          try {
            const body = { name: name.value }
            if (description.value.trim()) body.description = description.value.trim()
            await api.post('/v1/teams', body)
            showFieldErrors(form, null)
            mount(status)
            name.value = ''
            description.value = ''
            announce('Team created')
            await table.reload()
          } catch (error) {
            showFieldErrors(form, error)
            mount(status, errorBox(error))
          }
        },
      },
      h('div', { class: 'grid' }, field('Name', name), field('Description', description)),
      h('button', { type: 'submit', class: 'primary' }, 'Create team'),
      status,
    )
  }
  return {
    node: h(
      'div',
      null,
      h('h1', null, 'Teams'),
      form ? section('Create a team', form) : null,
      section('All teams', table.node),
    ),
  }
}

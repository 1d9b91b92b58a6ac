// Delivery: what reaches the signed-in member and why (GET /v1/me/delivery), and the assignments
// that deliver a plugin to a member, a team or the whole organization.
import { all } from './cp-org.mjs'
import { announce, errorBox, h, mount } from './dom.mjs'

const SCOPE = { member: 'you', team: 'your team', organization: 'everyone', worker: 'this Worker' }

/** Why an item arrives, in words: "plugin Kit → your team Core". */
export function reasonText(reason) {
  const whom = reason.scope === 'team' && reason.team ? `team ${reason.team.name}` : SCOPE[reason.scope]
  if (reason.via === 'grant') return `granted to ${whom}`
  return `${reason.via} ${reason.name} → ${whom}`
}

/** Every item delivered to the caller, each with why it arrives. */
export function deliveredList(api) {
  const node = h('div', { 'aria-live': 'polite' })
  const load = async () => {
    try {
      const set = await api.get('/v1/me/delivery')
      mount(
        node,
        h(
          'ul',
          { class: 'plain', 'aria-label': 'Delivered to you' },
          set.items.length
            ? set.items.map((item) =>
                h(
                  'li',
                  null,
                  h('span', { class: 'pill' }, item.type),
                  ' ',
                  h('strong', null, item.name),
                  h('div', { class: 'muted small' }, item.reasons.map(reasonText).join('; ')),
                ),
              )
            : h('li', { class: 'muted' }, 'Nothing is delivered to you yet.'),
        ),
      )
    } catch (error) {
      mount(node, errorBox(error))
    }
  }
  void load()
  return node
}

/** Who a plugin is delivered to, with assign and unassign when the caller manages the plugin. */
export function pluginAssignments(api, plugin, manage) {
  const node = h('div', { 'aria-live': 'polite' })
  const base = `/v1/plugins/${plugin.id}/assignments`
  const run = async (fn, done) => {
    try {
      await fn()
      announce(done)
      await load()
    } catch (error) {
      mount(node, errorBox(error))
    }
  }
  const load = async () => {
    try {
      const [assignments, teams] = await Promise.all([all(api, base), all(api, '/v1/teams').catch(() => [])])
      const teamName = new Map(teams.map((t) => [t.id, t.name]))
      const target = h(
        'select',
        { 'aria-label': `Deliver ${plugin.name} to` },
        h('option', { value: 'org' }, 'Everyone in the organization'),
        teams.map((t) => h('option', { value: `team:${t.id}` }, `Team ${t.name}`)),
      )
      mount(
        node,
        h('h4', null, 'Delivered to'),
        h(
          'ul',
          { class: 'plain', 'aria-label': `Who receives ${plugin.name}` },
          assignments.length
            ? assignments.map((a) => {
                const label = a.orgWide
                  ? 'Everyone in the organization'
                  : a.teamId
                    ? `Team ${teamName.get(a.teamId) ?? a.teamId}`
                    : `Member ${a.memberId}`
                return h(
                  'li',
                  { class: 'row' },
                  label,
                  manage
                    ? h(
                        'button',
                        {
                          type: 'button',
                          'aria-label': `Unassign ${plugin.name} from ${label}`,
                          onclick: () => run(() => api.del(`${base}/${a.id}`), 'Assignment removed'),
                        },
                        'Unassign',
                      )
                    : null,
                )
              })
            : h('li', { class: 'muted' }, 'Not delivered to anyone yet.'),
        ),
        manage
          ? h(
              'div',
              { class: 'row' },
              target,
              h(
                'button',
                {
                  type: 'button',
                  onclick: () => {
                    const value = target.value
                    const body = value === 'org' ? { orgWide: true } : { teamId: value.slice('team:'.length) }
                    return run(() => api.post(base, body), `${plugin.name} assigned`)
                  },
                },
                'Assign',
              ),
            )
          : null,
      )
    } catch (error) {
      mount(node, errorBox(error))
    }
  }
  void load()
  return node
}

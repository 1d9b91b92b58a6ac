// The audit log, a live tail of workspace events, and the sidecar's state.
import { errorBox, field, h, mount, scroller, section, when } from './dom.mjs'
import { follow } from './sse.mjs'

async function workspaceChooser(api, wanted, page, body) {
  const { items } = await api.get('/workspaces')
  if (!items.length) {
    mount(body, h('p', { class: 'muted' }, 'No workspaces are configured.'))
    return null
  }
  const ws = items.find((w) => w.id === wanted) ?? items[0]
  const select = h(
    'select',
    {
      onchange: () => {
        location.hash = `${page}/${encodeURIComponent(select.value)}`
      },
    },
    items.map((w) => h('option', { value: w.id, selected: w.id === ws.id }, w.name)),
  )
  return { ws, chooser: items.length > 1 ? field('Workspace', select) : null }
}

function actorText(actor) {
  return [actor?.type, actor?.scope, actor?.tokenId, actor?.clientId].filter(Boolean).join(' · ')
}

/** The audit page: newest first, filtered by text and by who acted. */
export function auditPage(api, [wanted]) {
  const body = h('div', null, h('p', { class: 'muted' }, 'Loading…'))
  void (async () => {
    try {
      const chosen = await workspaceChooser(api, wanted, 'audit', body)
      if (!chosen) return
      const text = h('input', { type: 'search', autocomplete: 'off' })
      const actor = h(
        'select',
        null,
        ['', 'host', 'remote', 'anonymous'].map((value) => h('option', { value }, value || 'Anyone')),
      )
      const limit = h(
        'select',
        null,
        ['50', '100', '200'].map((value) => h('option', { value }, value)),
      )
      const table = h('div', { 'aria-live': 'polite' })
      let entries = []
      const render = () => {
        const needle = text.value.trim().toLowerCase()
        const shown = entries.filter(
          (e) =>
            (!actor.value || e.actor?.type === actor.value) &&
            (!needle || `${e.action} ${e.target} ${e.summary}`.toLowerCase().includes(needle)),
        )
        if (!shown.length) return mount(table, h('p', { class: 'muted' }, 'No entries match.'))
        mount(
          table,
          scroller(
            'Audit entries',
            h(
              'table',
              null,
              h('caption', { class: 'visually-hidden' }, 'Audit entries'),
              h(
                'thead',
                null,
                h(
                  'tr',
                  null,
                  ['When', 'Action', 'Summary', 'Who'].map((t) => h('th', { scope: 'col' }, t)),
                ),
              ),
              h(
                'tbody',
                null,
                shown.map((e) =>
                  h(
                    'tr',
                    null,
                    h('td', null, when(e.timestamp)),
                    h('td', null, h('code', null, e.action)),
                    h('td', null, e.summary),
                    h('td', null, actorText(e.actor)),
                  ),
                ),
              ),
            ),
          ),
        )
      }
      const load = async () => {
        try {
          entries = (await api.get(`/workspace/${encodeURIComponent(chosen.ws.id)}/audit?limit=${limit.value}`)).items
          render()
        } catch (error) {
          mount(table, errorBox(error))
        }
      }
      text.addEventListener('input', render)
      actor.addEventListener('change', render)
      limit.addEventListener('change', load)
      mount(
        body,
        chosen.chooser,
        h(
          'div',
          { class: 'grid filters' },
          field('Search', text),
          field('Who', actor),
          field('Newest', limit),
          h('div', { class: 'field end' }, h('button', { type: 'button', onclick: load }, 'Refresh')),
        ),
        table,
      )
      await load()
    } catch (error) {
      mount(body, errorBox(error))
    }
  })()
  return { node: h('div', null, h('h1', null, 'Audit log'), body) }
}

const MAX_TAIL = 500

function describe(event) {
  if (event.type === 'reload') {
    const trigger = event.trigger ?? {}
    return `Reload (${event.reason ?? 'config'}): ${[trigger.type, trigger.name, trigger.action].filter(Boolean).join(' ')}${event.source ? ` · from ${event.source}` : ''}`
  }
  if (event.type === 'approval.requested') return `Approval requested: ${event.approval?.summary ?? ''}`
  if (event.type === 'approval.decided')
    return `Approval ${event.decision?.allowed ? 'allowed' : (event.decision?.reason ?? 'refused')}: ${event.approval?.summary ?? ''}`
  return event.type
}

/** The events page: the workspace's event stream as it happens (recent history first). */
export function eventsPage(api, [wanted]) {
  const body = h('div', null, h('p', { class: 'muted' }, 'Loading…'))
  let stream = null
  let disposed = false
  void (async () => {
    try {
      const chosen = await workspaceChooser(api, wanted, 'events', body)
      if (!chosen || disposed) return
      const state = h('p', { class: 'muted', role: 'status' }, 'Connecting…')
      const list = h('ol', { class: 'tail', 'aria-label': 'Events, newest first' })
      const empty = h(
        'li',
        { class: 'muted' },
        'No events yet. Changes to config, skills, commands, plugins and MCP appear here.',
      )
      list.append(empty)
      mount(body, chosen.chooser, state, list)
      const id = encodeURIComponent(chosen.ws.id)
      // Start from recent history so the page is not empty, then follow from its cursor.
      const page = await api.get(`/workspace/${id}/events?limit=50&since=0`)
      const recent = page.items.slice(-50)
      const add = (event) => {
        empty.remove()
        list.prepend(
          h('li', null, h('span', { class: 'muted' }, `${when(event.timestamp)} · #${event.seq} `), describe(event)),
        )
        while (list.children.length > MAX_TAIL) list.lastElementChild.remove()
      }
      for (const event of recent) add(event)
      if (disposed) return
      const since = recent.length ? recent[recent.length - 1].seq : page.cursor
      stream = follow(`/workspace/${id}/events?since=${since}`, api.headers, {
        onEvent: ({ data }) => {
          if (data && typeof data === 'object') add(data)
        },
        onState: (s, detail) => {
          state.textContent =
            s === 'open'
              ? 'Live'
              : s === 'retrying'
                ? `Reconnecting… ${detail ?? ''}`
                : `Stopped${detail ? `: ${detail}` : ''}`
        },
      })
    } catch (error) {
      mount(body, errorBox(error))
    }
  })()
  return {
    node: h('div', null, h('h1', null, 'Events'), body),
    dispose: () => {
      disposed = true
      stream?.close()
    },
  }
}

/** The sidecar page: configured, reachable, version and the managed process, from `/status`. */
export function sidecarPage(api) {
  const body = h('div', { 'aria-live': 'polite' }, h('p', { class: 'muted' }, 'Loading…'))
  const load = async () => {
    try {
      const status = await api.get('/status')
      const sidecar = status.sidecar
      const rows = Object.entries(sidecar?.workspaces ?? {})
      mount(
        body,
        section(
          'Server',
          h(
            'dl',
            { class: 'facts' },
            h('dt', null, 'Version'),
            h('dd', null, status.version),
            h('dt', null, 'Approvals'),
            h('dd', null, `${status.approval.mode} (timeout ${Math.round(status.approval.timeoutMs / 1000)} s)`),
            h('dt', null, 'Read-only'),
            h('dd', null, status.readOnly ? 'yes' : 'no'),
            h('dt', null, 'Pending approvals'),
            h('dd', null, String(status.pendingApprovals)),
          ),
        ),
        section(
          'Sidecar per workspace',
          rows.length
            ? scroller(
                'Sidecar state per workspace',
                h(
                  'table',
                  null,
                  h('caption', { class: 'visually-hidden' }, 'Sidecar state per workspace'),
                  h(
                    'thead',
                    null,
                    h(
                      'tr',
                      null,
                      ['Workspace', 'Configured', 'Reachable', 'Version', 'Checked', 'Error'].map((t) =>
                        h('th', { scope: 'col' }, t),
                      ),
                    ),
                  ),
                  h(
                    'tbody',
                    null,
                    rows.map(([id, s]) =>
                      h(
                        'tr',
                        null,
                        h('td', null, id),
                        h('td', null, s.configured ? (s.managed ? 'managed' : 'yes') : 'no'),
                        h(
                          'td',
                          null,
                          h('span', { class: `pill ${s.reachable ? 'ok' : 'bad'}` }, s.reachable ? 'yes' : 'no'),
                        ),
                        h('td', null, s.version ?? '—'),
                        h('td', null, when(s.checkedAt)),
                        h(
                          'td',
                          null,
                          s.error ? [h('code', null, s.error.code), s.error.cause ? ` ${s.error.cause}` : ''] : '—',
                        ),
                      ),
                    ),
                  ),
                ),
              )
            : h('p', { class: 'muted' }, 'No sidecar is configured.'),
        ),
        sidecar?.managed
          ? section(
              'Managed process',
              h(
                'dl',
                { class: 'facts' },
                h('dt', null, 'State'),
                h('dd', null, sidecar.managed.state),
                h('dt', null, 'PID'),
                h('dd', null, sidecar.managed.pid ?? '—'),
                h('dt', null, 'Restarts'),
                h('dd', null, String(sidecar.managed.restarts)),
                h('dt', null, 'Last exit'),
                h(
                  'dd',
                  null,
                  sidecar.managed.lastExit
                    ? `${sidecar.managed.lastExit.code ?? sidecar.managed.lastExit.signal} at ${when(sidecar.managed.lastExit.at)}`
                    : '—',
                ),
              ),
            )
          : null,
        h('button', { type: 'button', onclick: load }, 'Refresh'),
      )
    } catch (error) {
      mount(body, errorBox(error))
    }
  }
  void load()
  return { node: h('div', null, h('h1', null, 'Sidecar'), body) }
}

// One workspace's configuration and extensions, read through the API (secrets masked).
import { errorBox, h, jsonBlock, maskSecrets, mount, scroller, section } from './dom.mjs'
import { portabilityTab } from './ws-portability.mjs'

const TABS = [
  ['config', 'Config'],
  ['skills', 'Skills'],
  ['commands', 'Commands'],
  ['plugins', 'Plugins'],
  ['mcp', 'MCP servers'],
  ['transfer', 'Export and import'],
]

function itemsTable(caption, items, columns) {
  if (!items.length) return h('p', { class: 'muted' }, `No ${caption.toLowerCase()}.`)
  return scroller(
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
          columns.map(([title]) => h('th', { scope: 'col' }, title)),
        ),
      ),
      h(
        'tbody',
        null,
        items.map((item) =>
          h(
            'tr',
            null,
            columns.map(([, cell]) => h('td', null, cell(item))),
          ),
        ),
      ),
    ),
  )
}

const code = (value) => (value ? h('code', null, String(value)) : h('span', { class: 'muted' }, '—'))

async function tabContent(api, id, tab) {
  const base = `/workspace/${encodeURIComponent(id)}`
  switch (tab) {
    case 'skills': {
      const { items } = await api.get(`${base}/skills`)
      return itemsTable('Skills', items, [
        ['Name', (s) => h('strong', null, s.name)],
        ['Description', (s) => s.description],
        ['File', (s) => code(s.path)],
      ])
    }
    case 'commands': {
      const { items } = await api.get(`${base}/commands`)
      return itemsTable('Commands', items, [
        ['Name', (c) => h('strong', null, `/${c.name}`)],
        ['Description', (c) => c.description ?? ''],
        ['Agent or model', (c) => [c.agent, c.model].filter(Boolean).join(' · ')],
      ])
    }
    case 'plugins': {
      const { items, loadOrder } = await api.get(`${base}/plugins`)
      return h(
        'div',
        null,
        itemsTable('Plugins', items, [
          ['Plugin', (p) => h('strong', null, p.spec)],
          ['Source', (p) => p.source ?? ''],
          ['Path', (p) => code(p.path)],
        ]),
        loadOrder?.length ? h('p', { class: 'muted' }, `Load order: ${loadOrder.join(' → ')}`) : null,
      )
    }
    case 'mcp': {
      const { items } = await api.get(`${base}/mcp`)
      return itemsTable('MCP servers', items, [
        ['Name', (m) => h('strong', null, m.name)],
        ['Type', (m) => m.config?.type ?? ''],
        ['Enabled', (m) => (m.config?.enabled === false ? 'no' : 'yes')],
        ['Source', (m) => m.source ?? ''],
        ['Config (secrets masked)', (m) => jsonBlock(maskSecrets(m.config), `${m.name} configuration`)],
      ])
    }
    default: {
      const config = await api.get(`${base}/config`)
      return h(
        'div',
        null,
        h('p', { class: 'muted' }, 'Secret-looking values, environment variables and headers are masked.'),
        h('h3', null, 'opencode.json'),
        jsonBlock(maskSecrets(config.opencode ?? {}), 'opencode.json'),
        h('h3', null, 'Workspace settings'),
        jsonBlock(maskSecrets(config.workspace ?? {}), 'Workspace settings'),
      )
    }
  }
}

/** The workspaces page: `#workspaces/<id>/<tab>`; `store` holds pending approvals (an import waits for one). */
export function workspacePage(api, [wanted, wantedTab], store) {
  let transfer = null
  const body = h('div', null, h('p', { class: 'muted' }, 'Loading…'))
  const node = h('div', null, h('h1', null, 'Workspaces'), body)
  void (async () => {
    try {
      const { items } = await api.get('/workspaces')
      if (!items.length) return mount(body, h('p', { class: 'muted' }, 'No workspaces are configured.'))
      const ws = items.find((w) => w.id === wanted) ?? items[0]
      const tab = TABS.some(([t]) => t === wantedTab) ? wantedTab : 'config'
      const picker = h(
        'nav',
        { class: 'tabs', 'aria-label': 'Workspaces' },
        items.map((w) =>
          h(
            'a',
            { href: `#workspaces/${encodeURIComponent(w.id)}/${tab}`, 'aria-current': w.id === ws.id ? 'page' : null },
            w.name,
          ),
        ),
      )
      const tabs = h(
        'nav',
        { class: 'tabs', 'aria-label': `${ws.name} sections` },
        TABS.map(([t, label]) =>
          h(
            'a',
            { href: `#workspaces/${encodeURIComponent(ws.id)}/${t}`, 'aria-current': t === tab ? 'page' : null },
            label,
          ),
        ),
      )
      const content = h('div', { 'aria-live': 'polite' }, h('p', { class: 'muted' }, 'Loading…'))
      mount(body, items.length > 1 ? picker : null, section(`${ws.name}`, h('p', null, code(ws.path)), tabs, content))
      try {
        if (tab === 'transfer') {
          transfer = portabilityTab(api, store, ws)
          mount(content, transfer.node)
        } else mount(content, await tabContent(api, ws.id, tab))
      } catch (error) {
        mount(content, errorBox(error))
      }
    } catch (error) {
      mount(body, errorBox(error))
    }
  })()
  return { node, dispose: () => transfer?.dispose() }
}

// Skills: what the caller receives, the organization's skills (create from a SKILL.md), and skill
// hubs with their skills and assignments (to a member, a team or the whole organization).
import { withQuery } from './api.mjs'
import { deliveredList } from './cp-delivery.mjs'
import { all, pagedList, pagedTable } from './cp-org.mjs'
import { announce, errorBox, field, h, mount, section, showFieldErrors } from './dom.mjs'

const kb = (bytes) => `${Math.max(1, Math.round(bytes / 1024))} KB`
const ACTION = { create: 'new skill', update: 'new version', unchanged: 'unchanged' }

/** What an import did (or a preview would do), folder by folder. */
function importResult(result) {
  const count = (action) => result.items.filter((i) => i.action === action).length
  const totals = `${count('create')} created, ${count('update')} updated, ${count('unchanged')} unchanged`
  return h(
    'div',
    { class: 'progress-box' },
    h(
      'p',
      { role: 'status' },
      h('span', { class: 'pill ok' }, result.preview ? 'preview' : 'imported'),
      result.preview ? ` Would be: ${totals}. Nothing was stored.` : ` ${totals}.`,
    ),
    h(
      'ul',
      { class: 'plain', 'aria-label': result.preview ? 'What the import would do' : 'What was imported' },
      result.items.map((item) =>
        h(
          'li',
          null,
          h('strong', null, item.name),
          item.folder ? h('span', { class: 'muted' }, ` (${item.folder}/)`) : null,
          ` ${ACTION[item.action] ?? item.action}`,
          item.action === 'unchanged' ? '' : ` → v${item.versionNumber}`,
          ` · ${item.fileCount} file${item.fileCount === 1 ? '' : 's'} beside SKILL.md`,
        ),
      ),
    ),
  )
}

/** Upload a zip of skill folders: preview first if wanted, then import; progress, then the result. */
function importForm(api, onImported) {
  const file = h('input', { name: 'archive', type: 'file', accept: '.zip,application/zip' })
  const out = h('div', { 'aria-live': 'polite' })
  const buttons = []
  const run = (preview) => async () => {
    const chosen = file.files?.[0]
    if (!chosen) return mount(out, errorBox({ message: 'Choose a zip archive first.' }))
    for (const button of buttons) button.disabled = true
    const text = h('p', null, `Uploading ${chosen.name} (${kb(chosen.size)})…`)
    const bar = h('progress', { max: String(Math.max(chosen.size, 1)), value: '0', 'aria-label': 'Import progress' })
    mount(out, text, bar)
    try {
      const result = await api.upload(
        withQuery('/v1/config-objects/import', { preview: preview ? 'true' : '' }),
        chosen,
        'application/zip',
        (sent, total) => {
          bar.max = Math.max(total, 1)
          bar.value = sent
          if (sent < total) return
          // Sent: the server now reads and checks every folder (in one transaction).
          text.textContent = preview ? 'Uploaded; checking the archive…' : 'Uploaded; importing…'
          bar.removeAttribute('value')
        },
      )
      mount(out, importResult(result))
      announce(preview ? 'Preview ready' : 'Import finished')
      if (!preview) await onImported()
    } catch (error) {
      mount(out, errorBox(error))
    } finally {
      for (const button of buttons) button.disabled = false
    }
  }
  buttons.push(
    h('button', { type: 'button', onclick: run(true) }, 'Preview import'),
    h('button', { type: 'button', class: 'primary', onclick: run(false) }, 'Import'),
  )
  return h(
    'div',
    { class: 'card' },
    h('h3', null, 'Import skills from a zip'),
    field(
      'Zip archive',
      file,
      'One folder per skill (named like the skill, with its SKILL.md and files), or one SKILL.md at the root. A skill of the same name gets a new version. All or nothing.',
    ),
    h('div', { class: 'row' }, buttons),
    out,
  )
}

function via(path) {
  if (path.via === 'grant') return 'granted directly'
  const whom = path.principal === 'team' ? 'your team' : path.principal === 'organization' ? 'everyone' : 'you'
  return `hub ${path.hubName ?? path.hubId} → ${whom}`
}

function hubCard(api, hub, manage) {
  const body = h('div', { 'aria-live': 'polite' })
  const status = h('div', { 'aria-live': 'polite' })
  const run = async (fn, done) => {
    try {
      await fn()
      announce(done)
      await load()
    } catch (error) {
      mount(status, errorBox(error))
    }
  }
  const load = async () => {
    try {
      const [skills, assignments, teams, everySkill] = await Promise.all([
        all(api, `/v1/skill-hubs/${hub.id}/skills`),
        all(api, `/v1/skill-hubs/${hub.id}/assignments`),
        all(api, '/v1/teams').catch(() => []),
        manage ? all(api, '/v1/skills') : Promise.resolve([]),
      ])
      const teamName = new Map(teams.map((t) => [t.id, t.name]))
      const inHub = new Set(skills.map((s) => s.id))
      const addable = everySkill.filter((s) => !inHub.has(s.id) && s.status === 'active')
      const skillPick = h(
        'select',
        { 'aria-label': `Skill to add to ${hub.name}` },
        addable.map((s) => h('option', { value: s.id }, s.name)),
      )
      // A target the hub is already assigned to is not offered again (the server would refuse it).
      const assignedTeams = new Set(assignments.map((a) => a.teamId).filter(Boolean))
      const orgWide = assignments.some((a) => a.orgWide)
      const targets = [
        orgWide ? null : h('option', { value: 'org' }, 'Everyone in the organization'),
        teams
          .filter((t) => !assignedTeams.has(t.id))
          .map((t) => h('option', { value: `team:${t.id}` }, `Team ${t.name}`)),
      ]
      const targetPick = h('select', { 'aria-label': `Assign ${hub.name} to` }, targets)
      mount(
        body,
        h('h4', null, 'Skills'),
        h(
          'ul',
          { class: 'plain' },
          skills.length
            ? skills.map((s) =>
                h(
                  'li',
                  { class: 'row' },
                  h('strong', null, s.name),
                  h('span', { class: 'muted' }, s.description),
                  manage
                    ? h(
                        'button',
                        {
                          type: 'button',
                          'aria-label': `Remove ${s.name} from ${hub.name}`,
                          onclick: () =>
                            run(() => api.del(`/v1/skill-hubs/${hub.id}/skills/${s.id}`), `${s.name} removed`),
                        },
                        'Remove',
                      )
                    : null,
                ),
              )
            : h('li', { class: 'muted' }, 'No skills in this hub yet.'),
        ),
        manage && addable.length
          ? h(
              'div',
              { class: 'row' },
              skillPick,
              h(
                'button',
                {
                  type: 'button',
                  onclick: () =>
                    run(() => api.post(`/v1/skill-hubs/${hub.id}/skills`, { skillId: skillPick.value }), 'Skill added'),
                },
                `Add to ${hub.name}`,
              ),
            )
          : null,
        h('h4', null, 'Assigned to'),
        h(
          'ul',
          { class: 'plain' },
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
                          'aria-label': `Unassign ${hub.name} from ${label}`,
                          onclick: () =>
                            run(() => api.del(`/v1/skill-hubs/${hub.id}/assignments/${a.id}`), 'Assignment removed'),
                        },
                        'Unassign',
                      )
                    : null,
                )
              })
            : h('li', { class: 'muted' }, 'Not assigned yet.'),
        ),
        manage && targetPick.options.length
          ? h(
              'div',
              { class: 'row' },
              targetPick,
              h(
                'button',
                {
                  type: 'button',
                  onclick: () => {
                    const value = targetPick.value
                    const body = value === 'org' ? { orgWide: true } : { teamId: value.slice('team:'.length) }
                    return run(() => api.post(`/v1/skill-hubs/${hub.id}/assignments`, body), 'Hub assigned')
                  },
                },
                'Assign',
              ),
            )
          : null,
        status,
      )
    } catch (error) {
      mount(body, errorBox(error))
    }
  }
  void load()
  return h(
    'li',
    { class: 'card', dataset: { hub: hub.id } },
    h('h3', null, hub.name),
    hub.description ? h('p', { class: 'muted' }, hub.description) : null,
    body,
  )
}

/** The skills page. */
export function skillsPage({ api, can, me }) {
  const mine = pagedList(api, '/v1/me/skills', {
    label: 'Skills you receive',
    listClass: 'plain',
    empty: 'No skill reaches you yet.',
    render: ({ skill, paths }) =>
      h(
        'li',
        null,
        h('strong', null, skill.name),
        ` — ${skill.description}`,
        h('div', { class: 'muted small' }, paths.map(via).join('; ')),
      ),
  })
  void mine.reload()

  const parts = [h('h1', null, 'Skills'), section('Your skills', mine.node)]
  if (can('delivery.read'))
    parts.push(
      section(
        'Delivered to you',
        h('p', { class: 'muted small' }, 'Everything the organization delivers to you, and why each item arrives.'),
        deliveredList(api),
      ),
    )

  if (can('config_objects.read')) {
    const table = pagedTable(api, '/v1/skills', 'Skills', ['Name', 'Description', 'Version', 'Status'], (s) => [
      h('strong', null, s.name),
      s.description,
      `v${s.versionNumber}`,
      s.status,
    ])
    let form = null
    if (can('config_objects.write')) {
      const status = h('div', { 'aria-live': 'polite' })
      const skillMd = h('textarea', {
        name: 'skillMd',
        rows: '8',
        required: true,
        spellcheck: 'false',
        value: '---\nname: \ndescription: \n---\n',
      })
      form = h(
        'form',
        {
          class: 'card',
          novalidate: true,
          onsubmit: async (event) => {
            event.preventDefault()
            try {
              const created = await api.post('/v1/skills', { skillMd: skillMd.value })
              showFieldErrors(form, null)
              mount(status, h('p', { role: 'status' }, `Created ${created.item.name}.`))
              await table.reload()
              await hubs.reload()
            } catch (error) {
              showFieldErrors(form, error)
              mount(status, errorBox(error))
            }
          },
        },
        field('SKILL.md', skillMd, 'Frontmatter with a kebab-case name and a description, then the instructions.'),
        h('button', { type: 'submit', class: 'primary' }, 'Create skill'),
        status,
      )
    }
    const importer = can('config_objects.write')
      ? importForm(api, async () => {
          await table.reload()
          await hubs.reload()
        })
      : null
    parts.push(section('Organization skills', form, importer, table.node))
  }

  // Per-hub grants decide for members; the list does not carry them, so a member is offered the
  // controls of hubs they created, admins and owners those of every hub.
  const mayManage = (hub) =>
    can('skill_hubs.write') && (me.member?.role !== 'member' || hub.createdByMemberId === me.member?.id)
  const hubs = pagedList(api, '/v1/skill-hubs', {
    label: 'Skill hubs',
    listClass: 'cards',
    empty: 'No skill hubs yet.',
    render: (hub) => hubCard(api, hub, mayManage(hub)),
  })
  let hubForm = null
  if (can('skill_hubs.write')) {
    const status = h('div', { 'aria-live': 'polite' })
    const name = h('input', { name: 'name', type: 'text', required: true, autocomplete: 'off' })
    hubForm = h(
      'form',
      {
        class: 'card',
        novalidate: true,
        onsubmit: async (event) => {
          event.preventDefault()
          try {
            await api.post('/v1/skill-hubs', { name: name.value })
            showFieldErrors(hubForm, null)
            mount(status)
            name.value = ''
            announce('Skill hub created')
            await hubs.reload()
          } catch (error) {
            showFieldErrors(hubForm, error)
            mount(status, errorBox(error))
          }
        },
      },
      field('Hub name', name),
      h('button', { type: 'submit', class: 'primary' }, 'Create hub'),
      status,
    )
  }
  if (can('skill_hubs.read')) {
    void hubs.reload()
    parts.push(section('Skill hubs', hubForm, hubs.node))
  }
  return { node: h('div', null, parts) }
}

import { execFileSync } from 'node:child_process'
import { setTimeout as sleep } from 'node:timers/promises'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { strToU8, zipSync } from 'fflate'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { assert, startChild, suite, tempDir, type ChildServer } from '../harness.ts'
import { browserAvailable, cspViolations, launchBrowser, reviewPage, WIDTHS } from './browser-kit.ts'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))

// Without chromium, browser-kit has said so in one line and the suite is left out.
if (browserAvailable()) {
  const test = suite('console in a browser: control plane', { timeoutMs: 300_000 })
  const dir = tempDir('svc-browser-cp-')
  let server: ChildServer
  let browser: { browser: Browser; close(): Promise<void> }
  let admin: Page
  let adminContext: BrowserContext
  let violations: string[]
  let inviteLink = ''
  let consoleUrl = ''
  let bo: Page

  const repo = join(dir.path, 'skills-repo')
  const git = (...args: string[]) =>
    execFileSync('git', ['-c', 'user.email=t@example.test', '-c', 'user.name=t', ...args], {
      cwd: repo,
      stdio: 'ignore',
    })

  /** Calls the API outside the browser with the admin's session, as another client of the organization would. */
  const asAdmin = async (method: string, path: string, body?: unknown) => {
    const token = await admin.evaluate(() => sessionStorage.getItem('service-console.control-plane-session'))
    return fetch(`${server.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
  }
  /** Marks the document; `sameDocument` is false once the page was reloaded or navigated away. */
  const markDocument = (page: Page) =>
    page.evaluate(() => {
      ;(window as unknown as { notReloaded?: boolean }).notReloaded = true
    })
  const sameDocument = (page: Page) =>
    page.evaluate(() => (window as unknown as { notReloaded?: boolean }).notReloaded === true)
  /** The paths a page requests from now until `stop()`. */
  const recordRequests = (page: Page) => {
    const paths: string[] = []
    const listener = (request: { url(): string }) => {
      const url = new URL(request.url())
      paths.push(url.pathname + url.search)
    }
    page.on('request', listener)
    return { paths, stop: () => page.off('request', listener) }
  }
  const LIVE = 'Live: changes appear as they happen.'

  test.before(async () => {
    server = await startChild(
      process.execPath,
      [
        'bin/service-server.ts',
        '--mode',
        'control-plane',
        '--data-dir',
        join(dir.path, 'data'),
        '--port',
        '0',
        '--host',
        '127.0.0.1',
      ],
      // file:// remotes let the connector flow sync a local repository.
      { cwd: ROOT, timeoutMs: 60_000, env: { SERVICE_CONNECTORS_ALLOW_FILE_URLS: 'true' } },
    )
    browser = await launchBrowser()
    adminContext = await browser.browser.newContext({ viewport: WIDTHS.wide })
    // Generous waits: the suite must hold on a machine shared with other builds and test runs.
    adminContext.setDefaultTimeout(60_000)
    admin = await adminContext.newPage()
    admin.on('dialog', (dialog) => void dialog.accept())
    violations = cspViolations(admin)
  })

  test.after(async () => {
    await browser?.close()
    await server?.stop()
    dir.remove()
  })

  test('the start-up banner keeps the listening line first and names the console address', async () => {
    // The console line comes right after the listening line; give a loaded machine a moment to flush it.
    for (let i = 0; i < 50 && !server.stdoutLines.some((l) => l.startsWith('console: ')); i++) await sleep(100)
    assert.match(
      server.stdoutLines[0] ?? '',
      /^service-server \S+ control-plane listening on http:\/\/127\.0\.0\.1:\d+$/,
    )
    const line = server.stdoutLines.find((l) => l.startsWith('console: '))
    assert.is(line, `console: ${server.url}/console/`, server.stdoutLines.join('\n'))
    consoleUrl = line!.slice('console: '.length)
  })

  test('the first person signs up, is told what a too-short password lacks, and creates an organization', async () => {
    // Opened from the address the banner printed.
    await admin.goto(consoleUrl)
    await admin.getByRole('heading', { name: 'Create an account' }).waitFor()
    await reviewPage(admin, 'cp-sign-in')
    const signUp = admin.locator('form', { has: admin.getByRole('heading', { name: 'Create an account' }) })
    await signUp.getByLabel('Name').fill('Ada Admin')
    await signUp.getByLabel('Email').fill('ada@example.test')
    await signUp.getByLabel('Password').fill('short')
    await signUp.getByRole('button', { name: 'Sign up' }).click()
    // The 422's issue is shown next to the password field it concerns.
    const fieldError = signUp.locator('.field-error')
    await fieldError.waitFor()
    assert.is(await signUp.getByLabel('Password').getAttribute('aria-invalid'), 'true')
    await reviewPage(admin, 'cp-sign-up-field-error')
    await signUp.getByLabel('Password').fill('a long enough password 1')
    await signUp.getByRole('button', { name: 'Sign up' }).click()
    await admin.getByRole('heading', { level: 1, name: 'Organizations' }).waitFor()
    await admin.getByLabel('Name').fill('Acme')
    await admin.getByRole('button', { name: 'Create organization' }).click()
    await admin.getByRole('heading', { level: 1, name: 'Members' }).waitFor()
    await admin.getByRole('cell', { name: 'Ada Admin', exact: true }).waitFor()
    await reviewPage(admin, 'cp-members')
  })

  test('an admin creates a team and invites a colleague; the link is shown once', async () => {
    await admin.getByRole('link', { name: 'Teams' }).click()
    await admin.getByLabel('Name').fill('Platform')
    await admin.getByLabel('Description').fill('Builds the platform')
    await admin.getByRole('button', { name: 'Create team' }).click()
    await admin.getByRole('cell', { name: 'Platform', exact: true }).waitFor()
    await reviewPage(admin, 'cp-teams')
    await admin.getByRole('link', { name: 'Invitations' }).click()
    await admin.getByLabel('Email').fill('bo@example.test')
    await admin.getByRole('button', { name: 'Invite' }).click()
    inviteLink = await admin.getByLabel(/Invitation link/).inputValue()
    assert.match(inviteLink, /\/console\/#invite=svi_/)
    await admin.getByRole('cell', { name: 'bo@example.test', exact: true }).waitFor()
    await reviewPage(admin, 'cp-invitations')
  })

  test('the invited person opens the link in another browser, signs up and lands in the organization as a member', async () => {
    const context = await browser.browser.newContext({ viewport: WIDTHS.narrow })
    context.setDefaultTimeout(60_000)
    {
      bo = await context.newPage()
      const boViolations = cspViolations(bo)
      await bo.goto(inviteLink)
      await bo.getByText('You were invited to an organization').waitFor()
      assert.not.match(bo.url(), /invite=/, 'the invitation token leaves the address bar')
      const signUp = bo.locator('form', { has: bo.getByRole('heading', { name: 'Create an account' }) })
      await signUp.getByLabel('Name').fill('Bo Member')
      await signUp.getByLabel('Email').fill('bo@example.test')
      await signUp.getByLabel('Password').fill('another long password 2')
      await signUp.getByRole('button', { name: 'Sign up' }).click()
      await bo.getByRole('heading', { level: 1, name: 'Members' }).waitFor()
      await bo.getByRole('cell', { name: 'Ada Admin', exact: true }).waitFor()
      assert.match((await bo.locator('header.top').textContent()) ?? '', /Acme/)
      // A member may not manage invitations, API keys or roles: the console does not offer them.
      assert.is(await bo.getByRole('link', { name: 'Invitations' }).count(), 0)
      assert.is(await bo.getByRole('link', { name: 'API keys' }).count(), 0)
      assert.is(await bo.getByRole('button', { name: /Make|Remove/ }).count(), 0)
      await bo.getByRole('link', { name: 'Teams' }).click()
      await bo.getByRole('cell', { name: 'Platform', exact: true }).waitFor()
      assert.is(await bo.getByRole('button', { name: 'Create team' }).count(), 0)
      await reviewPage(bo, 'cp-member-view')
      assert.equal(boViolations, [])
    }
    // The admin's invitations page, open all along, shows the invitation accepted without a reload.
    await admin
      .getByRole('row', { name: /bo@example\.test/ })
      .getByRole('cell', { name: 'accepted', exact: true })
      .waitFor()
  })

  test('the admin puts a skill in a hub assigned to the team, adds the member, and the member sees the skill', async () => {
    await admin.getByRole('link', { name: 'Skills' }).click()
    await admin.getByLabel('SKILL.md').fill('---\nname: Bad Name\ndescription: x\n---\nBody\n')
    await admin.getByRole('button', { name: 'Create skill' }).click()
    await admin.locator('.field-error').waitFor()
    await admin
      .getByLabel('SKILL.md')
      .fill('---\nname: code-review\ndescription: Reviews a change before merge\n---\nRead the diff first.\n')
    await admin.getByRole('button', { name: 'Create skill' }).click()
    await admin.getByRole('cell', { name: 'code-review', exact: true }).waitFor()
    await admin.getByLabel('Hub name').fill('Engineering')
    await admin.getByRole('button', { name: 'Create hub' }).click()
    const hub = admin.locator('li.card', { has: admin.getByRole('heading', { name: 'Engineering' }) })
    await hub.getByRole('button', { name: 'Add to Engineering' }).click()
    await hub.getByText('Reviews a change before merge').waitFor()
    await hub.getByLabel('Assign Engineering to').selectOption({ label: 'Team Platform' })
    await hub.getByRole('button', { name: 'Assign' }).click()
    await hub.getByRole('button', { name: 'Unassign Engineering from Team Platform' }).waitFor()
    // A team the hub is already assigned to is not offered again.
    assert.equal(await hub.getByLabel('Assign Engineering to').locator('option').allTextContents(), [
      'Everyone in the organization',
    ])
    await reviewPage(admin, 'cp-skills')
    await admin.getByRole('link', { name: 'Teams' }).click()
    await admin.getByText('0 members').click()
    await admin.getByLabel('Member to add to Platform').selectOption({ label: 'Bo Member (bo@example.test)' })
    await admin.getByRole('button', { name: 'Add to Platform' }).click()
    await admin.getByRole('button', { name: 'Remove Bo Member from Platform' }).waitFor()
    // The team's count follows the add.
    await admin.getByText('1 member', { exact: true }).waitFor()

    const mine = bo.getByRole('list', { name: 'Skills you receive' })
    // The member's page reads /v1/me/skills when it opens; on a loaded machine the first read can
    // come before the admin's last change is visible, so the member opens it again, as a person would.
    for (let attempt = 1; ; attempt++) {
      await bo.getByRole('link', { name: 'Organizations' }).click()
      await bo.getByRole('link', { name: 'Skills' }).click()
      try {
        await mine.getByText('code-review').waitFor({ timeout: 20_000 })
        break
      } catch (error) {
        if (attempt === 3) throw error
      }
    }
    assert.match((await mine.textContent()) ?? '', /hub Engineering → your team/)
    const delivered = bo.getByRole('list', { name: 'Delivered to you' })
    await delivered.getByText('code-review').waitFor()
    assert.match((await delivered.textContent()) ?? '', /hub Engineering → team Platform/)
    // The hub is the admin's: a member is not offered its controls.
    await bo.getByRole('heading', { name: 'Engineering' }).waitFor()
    assert.is(await bo.getByRole('button', { name: 'Assign' }).count(), 0)
    await reviewPage(bo, 'cp-member-skills')
  })

  test('skills are imported from a zip: a preview says what would change, the import shows progress and its result, a bad archive its code', async () => {
    await admin.getByRole('link', { name: 'Skills' }).click()
    const skillMd = (name: string, description: string) =>
      strToU8(`---\nname: ${name}\ndescription: ${description}\n---\nSteps for ${name}.\n`)
    const good = join(dir.path, 'skills.zip')
    writeFileSync(
      good,
      zipSync({
        'code-review/SKILL.md': skillMd('code-review', 'Reviews a change before merge, v2'),
        'deploy-check/SKILL.md': skillMd('deploy-check', 'Checks a deploy'),
        'deploy-check/scripts/check.sh': strToU8('#!/bin/sh\necho ok\n'),
      }),
    )
    const importer = admin.locator('.card', { has: admin.getByRole('heading', { name: 'Import skills from a zip' }) })
    await importer.getByLabel('Zip archive').setInputFiles(good)
    await importer.getByRole('button', { name: 'Preview import' }).click()
    await importer.getByText('Would be: 1 created, 1 updated, 0 unchanged. Nothing was stored.').waitFor()
    assert.is(
      await admin.getByRole('cell', { name: 'deploy-check', exact: true }).count(),
      0,
      'a preview stores nothing',
    )
    // Every state the import shows on its way, from upload to result.
    await importer.evaluate((card) => {
      const seen: string[] = []
      ;(window as unknown as { importSeen: string[] }).importSeen = seen
      new MutationObserver(() => {
        if (card.querySelector('progress')) seen.push('progress')
        const status = card.querySelector('[role="status"]')?.textContent
        if (status) seen.push(status)
      }).observe(card, { subtree: true, childList: true, characterData: true })
    })
    await importer.getByRole('button', { name: 'Import', exact: true }).click()
    await importer.getByRole('status').filter({ hasText: 'imported 1 created, 1 updated, 0 unchanged.' }).waitFor()
    const seen = await admin.evaluate(() => (window as unknown as { importSeen: string[] }).importSeen)
    assert.ok(seen.indexOf('progress') >= 0 && seen.indexOf('progress') < seen.length - 1, `shown: ${seen}`)
    assert.match(
      (await importer.textContent()) ?? '',
      /deploy-check \(deploy-check\/\) new skill → v1 · 1 file beside SKILL\.md/,
    )
    await admin.getByRole('cell', { name: 'deploy-check', exact: true }).waitFor()
    await reviewPage(admin, 'cp-skills-import')

    const bad = join(dir.path, 'bad.zip')
    writeFileSync(bad, zipSync({ 'wrong-folder/SKILL.md': skillMd('other-name', 'Misfiled') }))
    await importer.getByLabel('Zip archive').setInputFiles(bad)
    await importer.getByRole('button', { name: 'Import', exact: true }).click()
    await importer.getByRole('alert').filter({ hasText: 'zip_skill_name_mismatch' }).waitFor()
  })

  test('a long list pages: of 25 skill hubs the first 20 show, the rest after Show more', async () => {
    for (let i = 1; i <= 24; i++) {
      const made = await asAdmin('POST', '/v1/skill-hubs', { name: `Bulk hub ${String(i).padStart(2, '0')}` })
      assert.is(made.status, 201)
    }
    await admin.getByRole('link', { name: 'Members' }).click()
    await admin.getByRole('link', { name: 'Skills' }).click()
    const hubs = admin.getByRole('list', { name: 'Skill hubs' })
    await hubs.locator(':scope > li.card').nth(19).waitFor()
    assert.is(await hubs.locator(':scope > li.card').count(), 20)
    await admin.getByRole('button', { name: 'Show more skill hubs' }).click()
    await hubs.locator(':scope > li.card').nth(24).waitFor()
    assert.is(await hubs.locator(':scope > li.card').count(), 25)
    assert.ok(await admin.getByRole('button', { name: 'Show more skill hubs' }).isHidden(), 'no more pages')
  })

  test('the admin sees the new member, creates an API key shown once, and revokes it', async () => {
    await admin.getByRole('link', { name: 'Members' }).click()
    await admin.getByRole('cell', { name: 'Bo Member', exact: true }).waitFor()
    await admin.getByRole('link', { name: 'API keys' }).click()
    await admin.getByLabel('Name').fill('deploy bot')
    await admin.getByRole('button', { name: 'Create key' }).click()
    const key = await admin.getByLabel('API key deploy bot').inputValue()
    assert.match(key, /^svc_/)
    const me = await fetch(`${server.url}/v1/me`, { headers: { 'x-api-key': key } })
    assert.is(me.status, 200, await me.text())
    await reviewPage(admin, 'cp-api-keys')
    await admin.getByRole('button', { name: 'Revoke deploy bot' }).click()
    await admin.getByRole('cell', { name: 'No api keys.', exact: true }).waitFor()
    const after = await fetch(`${server.url}/v1/me`, { headers: { 'x-api-key': key } })
    assert.is(after.status, 401)
  })

  test('a config object is created with field errors first, edited, two versions compared, archived and restored', async () => {
    await admin.getByRole('link', { name: 'Config objects' }).click()
    await admin.getByText('Create a config object').click()
    const form = admin.locator('form', { has: admin.getByRole('button', { name: 'Create', exact: true }) })
    await form.getByLabel('Type').selectOption('context')
    await form.getByLabel('Source').fill('Always run the tests before merging.\n')
    await form.getByRole('button', { name: 'Create', exact: true }).click()
    // An empty title is refused by the server; the message sits beside the Title field.
    await form.locator('#' + (await form.getByLabel('Title').getAttribute('id')) + '-error').waitFor()
    await form.getByLabel('Title').fill('Merge rules')
    await form.getByRole('button', { name: 'Create', exact: true }).click()
    const detail = admin.locator('section', { has: admin.getByRole('heading', { name: 'Config object: Merge rules' }) })
    await detail
      .getByLabel('Source', { exact: true })
      .fill('Always run the tests before merging.\nAsk for one review.\n')
    await detail.getByRole('button', { name: 'Save as a new version' }).click()
    await detail.getByLabel('Compare from').waitFor()
    await detail.getByRole('button', { name: 'Compare' }).click()
    await detail.getByText('+ Ask for one review.').waitFor()
    assert.match((await detail.textContent()) ?? '', /1 line added, 0 removed/)
    await reviewPage(admin, 'cp-config-compare')
    await detail.getByRole('button', { name: 'Archive' }).click()
    await detail.getByRole('button', { name: 'Restore' }).click()
    await detail.getByRole('button', { name: 'Archive' }).waitFor()
    await admin.getByLabel('Search').fill('merge')
    await admin.getByRole('button', { name: 'Apply' }).click()
    await admin.getByRole('button', { name: 'Merge rules' }).waitFor()
    await admin.getByLabel('Search').fill('nothingmatches')
    await admin.getByRole('button', { name: 'Apply' }).click()
    await admin.getByRole('cell', { name: 'No config objects.' }).waitFor()
  })

  test('a skill edited in the console keeps its script; files are added, replaced, toggled and removed, and the diff lists them', async () => {
    const script = '#!/bin/sh\necho run\n'
    const skillMd = '---\nname: runner\ndescription: Runs things.\n---\n\nRun scripts/run.sh.\n'
    const created = await asAdmin('POST', '/v1/config-objects', {
      type: 'skill',
      sourceMode: 'cloud',
      title: 'Runner',
      input: {
        rawSourceText: skillMd,
        files: [
          { path: 'scripts/run.sh', content: script, executable: true },
          { path: 'notes.txt', content: 'old notes\n' },
        ],
      },
    })
    assert.is(created.status, 201)
    const id = ((await created.json()) as { item: { id: string } }).item.id
    const latestFiles = async () => {
      const res = await asAdmin('GET', `/v1/config-objects/${id}/versions/latest`)
      const body = (await res.json()) as {
        item: { number: number; files: Array<{ path: string; content?: string; executable?: boolean }> }
      }
      return body.item
    }
    await admin.getByRole('link', { name: 'Config objects' }).click()
    await admin.getByLabel('Search').fill('runner')
    await admin.getByRole('button', { name: 'Apply' }).click()
    await admin.getByRole('button', { name: 'Runner' }).click()
    const detail = admin.locator('section', { has: admin.getByRole('heading', { name: 'Config object: Runner' }) })
    // The version's files are listed with size, mode and hash, and text can be read.
    const viewed = detail.getByRole('region', { name: 'Files of version 1' })
    await viewed.getByRole('row', { name: /scripts\/run\.sh/ }).waitFor()
    assert.match((await viewed.getByRole('row', { name: /scripts\/run\.sh/ }).textContent()) ?? '', /19 B\s*yes/)
    await viewed.getByRole('button', { name: 'View scripts/run.sh' }).click()
    assert.is(await detail.getByLabel('Content of scripts/run.sh').first().textContent(), script)
    // Only SKILL.md changes: the script is kept byte for byte and stays executable.
    await detail.getByLabel('Source', { exact: true }).fill(`${skillMd}More.\n`)
    await detail.getByRole('region', { name: 'Files of the new version' }).waitFor()
    await detail.getByRole('button', { name: 'Save as a new version' }).click()
    await detail.getByRole('region', { name: 'Files of version 2' }).waitFor()
    let latest = await latestFiles()
    assert.is(latest.number, 2)
    assert.equal(
      latest.files.map((f) => [f.path, f.content, f.executable ?? false]),
      [
        ['notes.txt', 'old notes\n', false],
        ['scripts/run.sh', script, true],
      ],
    )
    // Add a file by pasting, replace one through the same form, toggle a mode, remove one.
    const editor = detail.locator('fieldset', { hasText: 'Files beside SKILL.md' })
    await editor.getByText('Add or replace a file').click()
    await editor.getByLabel('File path').fill('scripts/helper.sh')
    await editor.getByLabel('Or paste its text').fill('#!/bin/sh\necho help\n')
    await editor.getByRole('button', { name: 'Add file' }).click()
    await editor.getByRole('row', { name: /scripts\/helper\.sh/ }).waitFor()
    await editor.getByRole('button', { name: 'Set executable on scripts/helper.sh' }).click()
    const [chooser] = await Promise.all([
      admin.waitForEvent('filechooser'),
      editor.getByRole('button', { name: 'Replace scripts/helper.sh' }).click(),
    ])
    await chooser.setFiles({
      name: 'helper.sh',
      mimeType: 'text/plain',
      buffer: Buffer.from('#!/bin/sh\necho helped\n'),
    })
    await editor.getByRole('row', { name: /scripts\/helper\.sh\s*22 B\s*yes/ }).waitFor()
    await editor.getByRole('button', { name: 'Clear executable on scripts/run.sh' }).click()
    await editor.getByLabel('Or paste its text').fill('new notes\n')
    // Enter in the path adds the file rather than saving the version without it.
    await editor.getByLabel('File path').fill('notes.txt')
    await editor.getByLabel('File path').press('Enter')
    await editor.getByText('Replaced notes.txt; save to keep it.').waitFor()
    await editor.getByRole('button', { name: 'Remove notes.txt' }).click()
    await editor.getByRole('row', { name: /notes\.txt/ }).waitFor({ state: 'detached' })
    await detail.getByRole('button', { name: 'Save as a new version' }).click()
    await detail.getByRole('region', { name: 'Files of version 3' }).waitFor()
    latest = await latestFiles()
    assert.equal(
      latest.files.map((f) => [f.path, f.content, f.executable ?? false]),
      [
        ['scripts/helper.sh', '#!/bin/sh\necho helped\n', true],
        ['scripts/run.sh', script, false],
      ],
    )
    // The comparison lists file changes beside the SKILL.md diff.
    await detail.getByLabel('Compare from').selectOption({ index: 1 })
    await detail.getByRole('button', { name: 'Compare' }).click()
    const changes = detail.getByRole('list', { name: 'File changes from v2 to v3' })
    await changes.waitFor()
    const text = (await changes.textContent()) ?? ''
    assert.match(text, /notes\.txt removed/)
    assert.match(text, /scripts\/helper\.sh added \(22 B, executable\)/)
    assert.match(text, /scripts\/run\.sh executable: true → false/)
    await reviewPage(admin, 'cp-skill-files')
  })

  test('a git connector over a local repository is connected, discovered, mapped and synced with progress', async () => {
    for (const name of ['lint', 'triage']) {
      mkdirSync(join(repo, 'skills', name), { recursive: true })
      writeFileSync(
        join(repo, 'skills', name, 'SKILL.md'),
        `---\nname: ${name}\ndescription: The ${name} skill\n---\nDo ${name}.\n`,
      )
    }
    // One broken skill: the sync finishes partial and names it.
    mkdirSync(join(repo, 'skills', 'broken'), { recursive: true })
    writeFileSync(join(repo, 'skills', 'broken', 'SKILL.md'), '---\nname: Not Kebab\n---\n')
    git('init', '-q', '-b', 'main')
    git('add', '.')
    git('commit', '-q', '-m', 'skills')

    await admin.getByRole('link', { name: 'Connectors' }).click()
    // The page before (config objects) has a Type filter of its own until this one replaces it.
    await admin.getByRole('heading', { name: 'Connectors', level: 1 }).waitFor()
    await admin.getByLabel('Type').selectOption('git')
    await admin.getByLabel('Account', { exact: true }).fill(`file://${dir.path}`)
    await admin.getByLabel('Account name').fill('Local git')
    await admin.getByLabel('Instance name').fill('Team skills')
    await admin.getByLabel('Repository').fill(`file://${repo}`)
    await admin.getByRole('button', { name: 'Connect' }).click()
    await admin.getByText(/Target .* added/).waitFor()
    const card = admin.locator('[data-instance]', { hasText: 'Team skills' })
    await card.getByRole('button', { name: 'Discover' }).click()
    await card.getByRole('button', { name: /^Map / }).first().click()
    await card
      .getByRole('list', { name: /Mappings of/ })
      .locator('code')
      .first()
      .waitFor()
    await card.getByRole('button', { name: 'Sync now' }).click()
    await card
      .getByRole('status')
      .filter({ hasText: /Sync (completed|partial)/ })
      .waitFor({ timeout: 60_000 })
    const text = (await card.textContent()) ?? ''
    assert.match(text, /created 2/, text)
    assert.match(text, /skills\/broken\/SKILL\.md/, 'the failed item is named')
    await reviewPage(admin, 'cp-connectors')
  })

  test('a sync started outside the console shows on its connector card with progress and result, live from the change feed', async () => {
    await admin.getByText(LIVE).waitFor()
    await markDocument(admin)
    writeFileSync(
      join(repo, 'skills', 'lint', 'SKILL.md'),
      '---\nname: lint\ndescription: The lint skill, v2\n---\nLint.\n',
    )
    git('commit', '-qam', 'lint v2')
    const card = admin.locator('[data-instance]', { hasText: 'Team skills' })
    const targetId = await card.locator('[data-target]').getAttribute('data-target')
    const requests = recordRequests(admin)
    const started = await asAdmin('POST', `/v1/connector-targets/${targetId}/sync`)
    assert.is(started.status, 202, await started.clone().text())
    const sync = ((await started.json()) as { item: { id: string } }).item
    // The card was showing the first sync's result; the new one replaces it as the feed reports it.
    await card.getByText(/created 0 · updated 1 · unchanged 1/).waitFor({ timeout: 60_000 })
    await card
      .getByRole('status')
      .filter({ hasText: /Sync partial/ })
      .waitFor()
    requests.stop()
    assert.ok(await sameDocument(admin), 'the page was not reloaded')
    assert.ok(
      requests.paths.some((p) => p === `/v1/connector-sync-events/${sync.id}`),
      `the card re-read the sync the feed announced: ${requests.paths}`,
    )
    assert.match((await card.textContent()) ?? '', /skills\/broken\/SKILL\.md/, 'the failed item is still named')
    await card.getByRole('button', { name: 'Retry failed items' }).waitFor()
  })

  test('a model provider is added with a key that is never shown again, and plugins and marketplaces are assembled', async () => {
    await admin.getByRole('link', { name: 'Model providers' }).click()
    await admin.getByLabel('Models').waitFor()
    await admin.waitForFunction(
      () => (document.querySelector('select[name="catalogProviderId"]') as HTMLSelectElement)?.options.length > 0,
    )
    await admin.getByLabel('Name', { exact: true }).fill('Team models')
    await admin.getByLabel('API key').fill('provider-key-never-shown-0123')
    await admin.getByRole('button', { name: 'Add provider' }).click()
    const provider = admin.locator('li.card', { hasText: 'Team models' })
    await provider.getByText('key stored').waitFor()
    assert.is(await admin.getByLabel('API key').inputValue(), '')
    assert.not.match((await admin.locator('main').innerHTML()) ?? '', /provider-key-never-shown/)
    // The card lists the model ids, and the key can be replaced (never shown either).
    assert.match((await provider.textContent()) ?? '', /Model ids: \S/)
    const before = (await (await asAdmin('GET', '/v1/llm-providers?limit=50')).json()) as {
      items: Array<{ name: string; updatedAt: string }>
    }
    await provider.getByLabel('Replacement key for Team models').fill('replaced-key-never-shown-4567')
    await provider.getByRole('button', { name: 'Replace key' }).click()
    const changed = (list: typeof before) => list.items.find((p) => p.name === 'Team models')?.updatedAt
    let after = before
    for (let i = 0; i < 60 && changed(after) === changed(before); i++) {
      await sleep(500)
      after = (await (await asAdmin('GET', '/v1/llm-providers?limit=50')).json()) as typeof before
    }
    assert.is.not(changed(after), changed(before), 'the key change was stored')
    await provider.getByLabel('Replacement key for Team models').waitFor()
    assert.is(await provider.getByLabel('Replacement key for Team models').inputValue(), '')
    await reviewPage(admin, 'cp-providers')

    await admin.getByRole('link', { name: 'Plugins' }).click()
    await admin.getByLabel('Plugin name').fill('Review kit')
    await admin.getByRole('button', { name: 'Create plugin' }).click()
    const plugin = admin.locator('li.card', { has: admin.getByRole('heading', { name: 'Review kit' }) })
    await plugin.getByLabel('Config object to add to Review kit').selectOption({ label: 'Merge rules' })
    await plugin.getByRole('button', { name: 'Add to Review kit' }).click()
    await plugin.getByText('Merge rules (context)').waitFor()
    await plugin.getByLabel('Deliver Review kit to').selectOption({ label: 'Everyone in the organization' })
    await plugin.getByRole('button', { name: 'Assign' }).click()
    await plugin.getByRole('button', { name: 'Unassign Review kit from Everyone in the organization' }).waitFor()
    // What reaches the admin now says why: the plugin, delivered to everyone.
    await admin.getByRole('link', { name: 'Skills' }).click()
    const delivered = admin.getByRole('list', { name: 'Delivered to you' })
    await delivered.getByText('merge-rules').waitFor()
    assert.match((await delivered.textContent()) ?? '', /plugin Review kit → everyone/)
    await admin.getByRole('link', { name: 'Plugins' }).click()
    await admin.getByLabel('Marketplace name').fill('Company')
    await admin.getByRole('button', { name: 'Create marketplace' }).click()
    const market = admin.locator('li.card', { has: admin.getByRole('heading', { name: 'Company' }) })
    await market.getByRole('button', { name: 'Add to Company' }).click()
    await market.getByText('Review kit').waitFor()
    await reviewPage(admin, 'cp-plugins')
  })

  test('a Worker created elsewhere appears on the Workers page and its state follows the change feed without a reload', async () => {
    await admin.getByRole('link', { name: 'Workers' }).click()
    await admin.getByText(LIVE).waitFor()
    await admin.getByText('No Workers yet.').waitFor()
    await markDocument(admin)
    // Record every state the card shows, from the moment it appears.
    await admin.evaluate(() => {
      const seen: string[] = []
      ;(window as unknown as { seenStates: string[] }).seenStates = seen
      new MutationObserver(() => {
        const pill = document.querySelector('[data-worker] .pill')
        const state = pill?.textContent ?? ''
        if (state && seen[seen.length - 1] !== state) seen.push(state)
      }).observe(document.getElementById('main')!, { subtree: true, childList: true, characterData: true })
    })
    const requests = recordRequests(admin)
    const created = await asAdmin('POST', '/v1/workers', { name: 'feed-runner', provisioner: 'process' })
    assert.is(created.status, 202, await created.clone().text())
    const worker = ((await created.json()) as { item: { id: string } }).item
    const card = admin.locator(`li[data-worker="${worker.id}"]`)
    await card.waitFor()
    await card.locator('.pill', { hasText: /^(healthy|failed)$/ }).waitFor({ timeout: 60_000 })
    const seen = await admin.evaluate(() => (window as unknown as { seenStates: string[] }).seenStates)
    assert.is(seen[0], 'provisioning', `states shown: ${seen}`)
    assert.match(seen[seen.length - 1]!, /^(healthy|failed)$/)
    // Deleted elsewhere too: the card goes without a reload.
    const deleted = await asAdmin('DELETE', `/v1/workers/${worker.id}`)
    assert.is(deleted.status, 204)
    await admin.getByText('No Workers yet.').waitFor({ timeout: 60_000 })
    requests.stop()
    assert.ok(await sameDocument(admin), 'the page was not reloaded')
    // The feed drove it: the Worker was re-read as it changed, and the list was not polled (the one
    // list read places the Worker the feed announced).
    assert.ok(requests.paths.includes(`/v1/workers/${worker.id}`), `requests: ${requests.paths}`)
    const listReads = requests.paths.filter((p) => p.startsWith('/v1/workers?'))
    assert.ok(listReads.length <= 1, `the list was polled: ${listReads}`)
  })

  test('while the feed cannot be reached the Workers page says so and re-reads slowly, then goes live again', async () => {
    // The feed is refused (the rest of the API answers); the page is opened afresh to meet it.
    await admin.route('**/v1/events', (route) => route.abort())
    await admin.getByRole('link', { name: 'Organizations' }).click()
    await admin.getByRole('link', { name: 'Workers' }).click()
    await admin
      .getByText(/Live updates interrupted; reconnecting\. Re-reading every 10 s\./)
      .waitFor({ timeout: 60_000 })
    const created = await asAdmin('POST', '/v1/workers', { name: 'fallback-runner', provisioner: 'process' })
    assert.is(created.status, 202)
    const worker = ((await created.json()) as { item: { id: string } }).item
    // Found by the slow re-read, with no feed.
    await admin.locator(`li[data-worker="${worker.id}"]`).waitFor({ timeout: 30_000 })
    await admin.unroute('**/v1/events')
    // The reader retries (1, 2, 5, then every 10 s); once live, the feed removes the deleted Worker.
    await admin.getByText(LIVE).waitFor({ timeout: 60_000 })
    const deleted = await asAdmin('DELETE', `/v1/workers/${worker.id}`)
    assert.is(deleted.status, 204)
    await admin.getByText('No Workers yet.').waitFor({ timeout: 60_000 })
  })

  test('a Worker is created, its state follows live, its tokens are shown once and rotated, and it is deleted', async () => {
    await admin.getByRole('link', { name: 'Workers' }).click()
    await admin.getByLabel('Name').fill('build-runner')
    await admin.getByRole('button', { name: 'Create Worker' }).click()
    const card = admin.locator('li.card', { hasText: 'build-runner' })
    await card.waitFor()
    // The state pill follows the change feed's worker.state_changed until the Worker settles.
    await card.locator('.pill', { hasText: /^(healthy|failed)$/ }).waitFor({ timeout: 60_000 })
    await card.getByRole('button', { name: 'Issue new tokens' }).click()
    const client = card.getByLabel('build-runner client token')
    await client.waitFor({ timeout: 60_000 })
    const first = await client.inputValue()
    assert.match(first, /^wkc_/)
    const generation = Number(/generation (\d+)/.exec((await card.textContent()) ?? '')?.[1])
    assert.ok(generation >= 1, 'the token set names its generation')
    // The first set a person is issued replaces none anyone held, so the card does not say it does.
    await card.getByText('the first issued for this Worker').waitFor()
    assert.not.match((await card.textContent()) ?? '', /previous set no longer works/)
    // The runtime restarted on a new address; the open Runtime panel shows the current one.
    await card.getByText('Runtime', { exact: true }).click()
    await reviewPage(admin, 'cp-workers')
    await card.getByRole('button', { name: 'Issue new tokens' }).click()
    await card.getByText(`generation ${generation + 1}`).waitFor({ timeout: 60_000 })
    await card.getByText('The previous set no longer works.').waitFor()
    // Once the restarted runtime reports its address, the open panel shows it (not the old one).
    const workerId = await card.getAttribute('data-worker')
    let url: string | null = null
    for (let i = 0; i < 120 && !url; i++) {
      const runtime = await asAdmin('GET', `/v1/workers/${workerId}/runtime`)
      url = ((await runtime.json()) as { item: { url: string | null } }).item.url
      if (!url) await sleep(500)
    }
    if (url) await card.locator('dd code', { hasText: url }).waitFor({ timeout: 60_000 })
    const second = await card.getByLabel('build-runner client token').inputValue()
    assert.match(second, /^wkc_/)
    assert.is.not(second, first, 'rotation issued a new client token')
    // Revoked: the runtime stops, and the card says so with the reason, from the feed.
    await card.getByRole('button', { name: 'Revoke tokens of build-runner' }).click()
    await card.locator('.pill', { hasText: /^stopped$/ }).waitFor({ timeout: 60_000 })
    await card.locator('code', { hasText: 'tokens_revoked' }).waitFor()
    await card.getByRole('button', { name: 'Delete build-runner' }).click()
    await admin.getByText('No Workers yet.').waitFor({ timeout: 60_000 })
  })

  test('by keyboard alone: the skip link comes first, a section opens with Enter, a form submits, focus stays visible', async () => {
    // A keyboard user opening the console (the session survives in this tab's sessionStorage).
    await admin.goto(`${consoleUrl}#orgs`)
    await admin.reload()
    await admin.getByRole('heading', { level: 1, name: 'Organizations' }).waitFor()
    const focused = () =>
      admin.evaluate(() => {
        const el = document.activeElement as HTMLElement
        return { text: el.textContent, name: el.getAttribute('name'), outline: getComputedStyle(el).outlineStyle }
      })
    await admin.keyboard.press('Tab')
    assert.is((await focused()).text, 'Skip to content')
    let reached = false
    for (let i = 0; i < 40 && !reached; i++) {
      await admin.keyboard.press('Tab')
      reached = (await focused()).text === 'Workers'
    }
    assert.ok(reached, 'Tab reaches the Workers section link')
    assert.is.not((await focused()).outline, 'none', 'the focused link shows an outline')
    await admin.keyboard.press('Enter')
    await admin.getByRole('heading', { level: 1, name: 'Workers' }).waitFor()
    // The page takes the focus, so the next Tab lands in it: the create form's first field.
    await admin.keyboard.press('Tab')
    const input = await focused()
    assert.is(input.name, 'name')
    assert.is.not(input.outline, 'none', 'the focused field shows an outline')
    await admin.keyboard.type('keyboard-runner')
    await admin.keyboard.press('Enter')
    const card = admin.locator('li.card', { hasText: 'keyboard-runner' })
    await card.waitFor()
    const id = await card.getAttribute('data-worker')
    assert.is((await asAdmin('DELETE', `/v1/workers/${id}`)).status, 204)
    await admin.getByText('No Workers yet.').waitFor({ timeout: 60_000 })
  })

  test('signing out returns to the sign-in form and the session no longer works', async () => {
    await admin.getByRole('button', { name: 'Sign out' }).click()
    await admin.getByRole('heading', { name: 'Sign in' }).waitFor()
    assert.equal(violations, [])
  })

  test.run()
}

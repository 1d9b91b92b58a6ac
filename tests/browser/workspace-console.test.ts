import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Browser, Page } from 'playwright-core'
import { assert, startChild, suite, tempDir, type ChildServer } from '../harness.ts'
import { browserAvailable, cspViolations, launchBrowser, reviewPage, WIDTHS } from './browser-kit.ts'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const CLIENT = 'browser-suite-client-token-0123'
const HOST = 'browser-suite-host-token-0123456'

// Without chromium, browser-kit has said so in one line and the suite is left out.
if (browserAvailable()) {
  const test = suite('console in a browser: workspace host', { timeoutMs: 300_000 })
  const dir = tempDir('svc-browser-ws-')
  let server: ChildServer
  let browser: { browser: Browser; close(): Promise<void> }
  let page: Page
  let violations: string[]

  const api = (path: string, init: RequestInit = {}) =>
    fetch(server.url + path, {
      ...init,
      headers: { authorization: `Bearer ${CLIENT}`, 'content-type': 'application/json', ...init.headers },
    })

  test.before(async () => {
    const ws = join(dir.path, 'project')
    mkdirSync(join(ws, '.opencode/skills/review'), { recursive: true })
    writeFileSync(
      join(ws, '.opencode/skills/review/SKILL.md'),
      '---\nname: review\ndescription: Reviews a change\n---\nRead the diff.\n',
    )
    writeFileSync(
      join(ws, 'opencode.json'),
      JSON.stringify({
        mcp: {
          docs: { type: 'remote', url: 'http://127.0.0.1:9/mcp', headers: { Authorization: 'Bearer not-shown' } },
        },
      }),
    )
    writeFileSync(
      join(dir.path, 'server.json'),
      JSON.stringify({
        workspaces: [{ path: ws, id: 'project' }],
        token: CLIENT,
        hostToken: HOST,
        approval: { mode: 'manual', timeoutMs: 60_000 },
        authThrottle: { maxFailures: 10_000 },
      }),
    )
    server = await startChild(
      process.execPath,
      [
        'bin/service-server.ts',
        '--mode',
        'workspace',
        '--config',
        join(dir.path, 'server.json'),
        '--data-dir',
        join(dir.path, 'data'),
        '--port',
        '0',
        '--host',
        '127.0.0.1',
      ],
      { cwd: ROOT, timeoutMs: 60_000 },
    )
    browser = await launchBrowser()
    const context = await browser.browser.newContext({ viewport: WIDTHS.wide })
    // Generous waits: the suite must hold on a machine shared with other builds and test runs.
    context.setDefaultTimeout(60_000)
    page = await context.newPage()
    page.on('dialog', (dialog) => void dialog.accept())
    violations = cspViolations(page)
  })

  test.after(async () => {
    await browser?.close()
    await server?.stop()
    dir.remove()
  })

  async function bannerLink(): Promise<string> {
    for (let i = 0; i < 100; i++) {
      const line = server.stdoutLines.find((l) => l.startsWith('console '))
      if (line) return /(http:\/\/\S+)$/.exec(line)![1]!
      await new Promise((r) => setTimeout(r, 50))
    }
    throw new Error(`no console link in ${server.stdoutLines.join('\n')}`)
  }

  test('the one-time link from the banner signs the console in and leaves the address bar', async () => {
    const link = await bannerLink()
    assert.match(link, /\/console\/#code=svc_once_/)
    await page.goto(link)
    await page.getByRole('heading', { level: 1, name: 'Approvals' }).waitFor()
    assert.not.match(page.url(), /code=/, 'the code is gone from the address bar')
    await page.getByText('Live').first().waitFor()
    await reviewPage(page, 'ws-approvals-empty')
  })

  test("a client's write waits for approval, Allow lets it finish, Deny refuses the next", async () => {
    const allowed = api('/workspace/project/config', {
      method: 'PATCH',
      body: JSON.stringify({ opencode: { model: 'acme/fast' } }),
    })
    const card = page.locator('li.approval').first()
    await card.waitFor()
    assert.match((await card.textContent()) ?? '', /opencode\.json/)
    // What would change is shown under the held write: the config file's diff, its new line marked as added.
    const diff = card.locator('pre.diff')
    await diff.waitFor()
    assert.match((await diff.getAttribute('aria-label')) ?? '', /^Changes to opencode\.json/)
    assert.match((await diff.locator('.add').allTextContents()).join('\n'), /^\+.*"model": "acme\/fast"/m)
    await diff.focus()
    assert.ok(await diff.evaluate((el) => el === document.activeElement), 'the diff takes keyboard focus to scroll')
    await reviewPage(page, 'ws-approval-pending')
    await card.getByRole('button', { name: 'Allow' }).click()
    const allowedResponse = await allowed
    assert.is(allowedResponse.status, 200, await allowedResponse.text())
    await page.getByText('Nothing is waiting').waitFor()

    const denied = api('/workspace/project/config', {
      method: 'PATCH',
      body: JSON.stringify({ opencode: { model: 'acme/slow' } }),
    })
    await page.locator('li.approval').first().waitFor()
    // Keyboard only: focus Deny with Tab from Allow and press Enter.
    await page.locator('li.approval').first().getByRole('button', { name: 'Allow' }).focus()
    await page.keyboard.press('Tab')
    await page.keyboard.press('Enter')
    const deniedResponse = await denied
    assert.is(deniedResponse.status, 403)
    assert.is(((await deniedResponse.json()) as { code: string }).code, 'write_denied')
    await page.locator('.pill.bad', { hasText: 'Denied' }).first().waitFor()
    await page.locator('.pill.ok', { hasText: 'Allowed' }).first().waitFor()
  })

  test('a token is issued with its value shown once, works, and stops working when revoked', async () => {
    await page.getByRole('link', { name: 'Tokens' }).click()
    await page.getByRole('heading', { level: 1, name: 'Tokens' }).waitFor()
    await page.getByLabel('Scope').selectOption('viewer')
    await page.getByLabel('Label').fill('dashboard')
    await page.getByRole('button', { name: 'Issue token' }).click()
    const value = await page.getByLabel('New token').inputValue()
    assert.ok(value.length >= 32, value)
    assert.is((await fetch(`${server.url}/status`, { headers: { authorization: `Bearer ${value}` } })).status, 200)
    await page.getByRole('cell', { name: 'dashboard', exact: true }).waitFor()
    await reviewPage(page, 'ws-tokens')
    await page.reload()
    await page.getByRole('heading', { level: 1, name: 'Tokens' }).waitFor()
    assert.is(await page.getByLabel('New token').count(), 0, 'the value is not shown again')
    await page.getByRole('button', { name: 'Revoke dashboard' }).click()
    await page.getByText('No tokens issued yet.').waitFor()
    assert.is((await fetch(`${server.url}/status`, { headers: { authorization: `Bearer ${value}` } })).status, 401)
    // Revoked while its value is still on screen: the copy box clears.
    await page.getByLabel('Label').fill('short-lived')
    await page.getByRole('button', { name: 'Issue token' }).click()
    await page.getByLabel('New token').waitFor()
    await page.getByRole('button', { name: 'Revoke short-lived' }).click()
    await page.getByText('The token shown here was revoked.').waitFor()
    assert.is(await page.getByLabel('New token').count(), 0, 'the revoked value is gone')
  })

  test('the workspace pages show config, skills and MCP servers with secrets masked', async () => {
    await page.getByRole('link', { name: 'Workspaces' }).click()
    await page.getByText('"model": "acme/fast"').waitFor()
    const config = (await page.locator('pre.json').first().textContent()) ?? ''
    assert.not.match(config, /not-shown/, 'the header value is masked')
    await reviewPage(page, 'ws-config')
    await page.getByRole('link', { name: 'Skills' }).click()
    await page.getByRole('cell', { name: 'Reviews a change' }).waitFor()
    await reviewPage(page, 'ws-skills')
    await page.getByRole('link', { name: 'MCP servers' }).click()
    await page.getByRole('cell', { name: 'docs', exact: true }).waitFor()
    assert.not.match((await page.locator('main').textContent()) ?? '', /not-shown/)
    await reviewPage(page, 'ws-mcp')
  })

  test('the audit log lists the decisions and filters them', async () => {
    await page.getByRole('link', { name: 'Audit log' }).click()
    await page.getByRole('cell', { name: 'approval.deny' }).waitFor()
    await page.getByLabel('Search').fill('approval.allow')
    await page.getByRole('cell', { name: 'approval.allow' }).waitFor()
    assert.is(await page.getByRole('cell', { name: 'approval.deny' }).count(), 0)
    await reviewPage(page, 'ws-audit')
  })

  test('the event tail shows a change as it happens', async () => {
    await page.getByRole('link', { name: 'Events' }).click()
    await page.locator('main').getByText('Live', { exact: true }).waitFor()
    const write = api('/workspace/project/config', {
      method: 'PATCH',
      body: JSON.stringify({ workspace: { note: 'hello' } }),
    })
    await page.getByRole('link', { name: /Approvals/ }).click()
    await page.locator('li.approval').first().getByRole('button', { name: 'Allow' }).click()
    assert.is((await write).status, 200)
    await page.getByRole('link', { name: 'Events' }).click()
    await page.locator('ol.tail li', { hasText: 'Reload' }).first().waitFor()
    await reviewPage(page, 'ws-events')
  })

  test('the sidecar page reports that none is configured', async () => {
    await page.getByRole('link', { name: 'Sidecar' }).click()
    await page.getByRole('heading', { name: 'Sidecar per workspace' }).waitFor()
    await reviewPage(page, 'ws-sidecar')
  })

  test('a workspace is exported; an import is previewed, allowed in place and applied, then one is denied, each step shown', async () => {
    const project = join(dir.path, 'project')
    await page.getByRole('link', { name: 'Workspaces' }).click()
    await page.getByRole('link', { name: 'Export and import' }).click()
    await page.getByLabel('Secrets').selectOption('exclude')
    const download = page.waitForEvent('download')
    await page.getByRole('button', { name: 'Export', exact: true }).click()
    const exported = JSON.parse(readFileSync((await (await download).path())!, 'utf8')) as {
      skills: Array<{ name: string; content: string; files: unknown[] }>
      opencode?: unknown
      workspace?: unknown
    }
    assert.ok(
      exported.skills.some((skill) => skill.name === 'review'),
      'the export holds the workspace skill',
    )
    await page
      .getByRole('status')
      .filter({ hasText: /Exported 1 skill, 0 commands and 0 files/ })
      .waitFor()
    // The same file with one more skill (config left out, so only the skill changes).
    const triage = '---\nname: triage\ndescription: Sorts incoming issues\n---\nLabel first.\n'
    const withSkill = join(dir.path, 'import.json')
    writeFileSync(
      withSkill,
      JSON.stringify({ skills: [...exported.skills, { name: 'triage', content: triage, files: [] }] }),
    )
    const importer = page.locator('.card', { has: page.getByRole('heading', { name: 'Import' }) })
    await importer.getByLabel('Export file').setInputFiles(withSkill)
    await importer.getByRole('button', { name: 'Preview import' }).click()
    await importer
      .getByRole('list', { name: 'Changes the import makes' })
      .getByText(/triage/)
      .first()
      .waitFor()
    await importer.getByRole('button', { name: /^Import \d+ changes?$/ }).click()
    await importer.getByText('Waiting for the host to allow the import…').waitFor()
    await reviewPage(page, 'ws-import-waiting')
    await importer.getByRole('button', { name: 'Allow import' }).click()
    await importer
      .getByRole('status')
      .filter({ hasText: /imported \d+ changes applied \(1 created/ })
      .waitFor()
    assert.ok(existsSync(join(project, '.opencode/skills/triage/SKILL.md')), 'the skill was written')

    const changed = join(dir.path, 'import-2.json')
    writeFileSync(
      changed,
      JSON.stringify({ skills: [{ name: 'triage', content: triage.replace('first', 'last'), files: [] }] }),
    )
    await importer.getByLabel('Export file').setInputFiles(changed)
    await importer.getByRole('button', { name: 'Preview import' }).click()
    await importer.getByRole('button', { name: /^Import \d+ changes?$/ }).click()
    await importer.getByRole('button', { name: 'Deny import' }).click()
    await importer.getByRole('alert').waitFor()
    assert.match((await importer.locator('.steps li').last().getAttribute('class')) ?? '', /failed/)
    assert.match(readFileSync(join(project, '.opencode/skills/triage/SKILL.md'), 'utf8'), /Label first/)
    await reviewPage(page, 'ws-import-denied')
  })

  test('focus is visible and the skip link comes first', async () => {
    await page.getByRole('link', { name: 'Approvals' }).click()
    // The page renders on hashchange, after the click returns, and then moves focus to the main
    // region; the title is set in the same step, so once it reads Approvals focus has moved too.
    await page.waitForFunction(() => document.title.startsWith('Approvals'))
    await page.locator('body').focus()
    await page.keyboard.press('Tab')
    assert.is(await page.evaluate(() => document.activeElement?.textContent), 'Skip to content')
    const outline = await page.evaluate(() => getComputedStyle(document.activeElement!).outlineStyle)
    assert.is.not(outline, 'none')
  })

  test('sign-out ends the session; the host token signs back in; a wrong one reads well', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click()
    await page.getByRole('heading', { name: 'Workspace console' }).waitFor()
    await page.getByLabel('Host token').fill('not-the-host-token')
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.getByRole('alert').waitFor()
    assert.match((await page.getByRole('alert').textContent()) ?? '', /unauthorized/)
    await reviewPage(page, 'ws-sign-in')
    await page.getByLabel('Host token').fill(HOST)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.getByRole('heading', { level: 1, name: 'Approvals' }).waitFor()
  })

  test('nothing the console did was blocked by its Content-Security-Policy', () => {
    assert.equal(violations, [])
  })

  test.run()
}

/**
 * Shared by the browser suites: Debian's chromium driven by playwright-core, an axe-core check,
 * screenshots at the two widths the console must work at, and a collector for CSP violations.
 * @module
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Browser, Page } from 'playwright-core'
import { assert } from '../harness.ts'

/** Debian's package (`.ci/run` installs it); SERVICE_TEST_CHROMIUM points elsewhere. */
export const CHROMIUM = process.env.SERVICE_TEST_CHROMIUM ?? '/usr/bin/chromium'

/** True when the browser suites can run; otherwise the caller prints one line and skips. */
export function browserAvailable(): boolean {
  return existsSync(CHROMIUM)
}

// Printed once for all browser suites (this module is evaluated once per run).
if (!browserAvailable())
  console.log(
    `browser suite skipped: ${CHROMIUM} is missing (enable with: apt-get update && apt-get install -y chromium)`,
  )

/** Screenshots for review land here (gitignored). */
export const OUTPUT_DIR = fileURLToPath(new URL('./output/', import.meta.url))

/** The widths the console must work at: a phone and a laptop. */
export const WIDTHS = { narrow: { width: 390, height: 844 }, wide: { width: 1280, height: 800 } }

/** Starts headless chromium with a fresh profile; `close()` removes the profile. */
export async function launchBrowser(): Promise<{ browser: Browser; close(): Promise<void> }> {
  const { chromium } = await import('playwright-core')
  const profile = mkdtempSync(join(tmpdir(), 'svc-chromium-'))
  // Playwright creates the profile directory itself for launch(); a persistent context would give
  // a single context, and the flows need several (one per person). The temp dir above holds
  // chromium's crash and cache output so nothing lands in the home directory.
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      `--disk-cache-dir=${join(profile, 'cache')}`,
      `--crash-dumps-dir=${join(profile, 'crashes')}`,
    ],
    env: { ...process.env, HOME: profile },
  })
  return {
    browser,
    async close() {
      await browser.close().catch(() => {})
      rmSync(profile, { recursive: true, force: true })
    },
  }
}

/** Collects console messages that report a blocked resource or script (a CSP violation). */
export function cspViolations(page: Page): string[] {
  const found: string[] = []
  page.on('console', (message) => {
    const text = message.text()
    if (/Content Security Policy|Refused to/i.test(text)) found.push(text)
  })
  page.on('pageerror', (error) => found.push(`page error: ${error.message}`))
  return found
}

const AXE_SOURCE = readFileSync(
  fileURLToPath(new URL('../../node_modules/axe-core/axe.min.js', import.meta.url)),
  'utf8',
)

/** Runs axe-core on the page and fails on any serious or critical violation. */
export async function assertAccessible(page: Page, what: string): Promise<void> {
  // Evaluated over the DevTools protocol, which the page's CSP does not govern.
  await page.evaluate(AXE_SOURCE)
  const violations = await page.evaluate(async () => {
    const axe = (
      globalThis as unknown as {
        axe: {
          run(
            ctx: unknown,
            options: unknown,
          ): Promise<{
            violations: Array<{ id: string; impact: string; help: string; nodes: Array<{ target: unknown }> }>
          }>
        }
      }
    ).axe
    const result = await axe.run(document, { resultTypes: ['violations'] })
    return result.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      nodes: v.nodes.map((n) => n.target),
    }))
  })
  const bad = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
  assert.equal(bad, [], `${what}: ${JSON.stringify(bad, null, 1)}`)
}

/** Saves a full-page screenshot at both widths as `<name>-390.png` and `<name>-1280.png`. */
export async function screenshots(page: Page, name: string): Promise<void> {
  mkdirSync(OUTPUT_DIR, { recursive: true })
  const original = page.viewportSize()
  for (const size of [WIDTHS.narrow, WIDTHS.wide]) {
    await page.setViewportSize(size)
    await page.screenshot({ path: join(OUTPUT_DIR, `${name}-${size.width}.png`), fullPage: true })
    // Nothing may scroll sideways at either width.
    const overflow = await page.evaluate(() => {
      const width = document.documentElement.clientWidth
      // Name the outermost elements that stick out, to say what to fix (table cells scroll in their box).
      const culprits = [...document.querySelectorAll('body *')]
        .filter((el) => el.getBoundingClientRect().right > width + 1 && !el.closest('.table-wrap *'))
        .slice(0, 3)
        .map((el) => `${el.tagName.toLowerCase()}.${el.className}`)
      return { by: document.documentElement.scrollWidth - width, culprits }
    })
    assert.ok(overflow.by <= 1, `${name} scrolls sideways by ${overflow.by}px at ${size.width}px: ${overflow.culprits}`)
  }
  if (original) await page.setViewportSize(original)
}

/** Accessible and photographed: the per-page check every flow runs. */
export async function reviewPage(page: Page, name: string): Promise<void> {
  await assertAccessible(page, name)
  await screenshots(page, name)
}

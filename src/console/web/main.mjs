// Entry: asks the server which mode it runs in and loads that console.
import { h, mount } from './dom.mjs'

const root = document.getElementById('main')

async function start() {
  let mode
  try {
    const response = await fetch('/health', { cache: 'no-store' })
    mode = (await response.json()).mode
  } catch {
    mount(root, h('div', { class: 'error', role: 'alert' }, 'The server did not answer. Reload when it is running.'))
    return
  }
  const app = mode === 'control-plane' ? await import('./cp-app.mjs') : await import('./ws-app.mjs')
  app.start(root)
}

void start()

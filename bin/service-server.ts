#!/usr/bin/env bun
/**
 * `service-server` entry point: wires the real process (argv, env, signals, stdout) into `main`.
 * @module
 */
import { writeSync } from 'node:fs'
import { main } from '../src/main.ts'

const stopSignal = new Promise<string>((resolve) => {
  process.once('SIGINT', () => resolve('SIGINT'))
  process.once('SIGTERM', () => resolve('SIGTERM'))
})

const code = await main(process.argv.slice(2), {
  env: process.env,
  cwd: process.cwd(),
  // Synchronous writes: the listening line must be visible to a supervisor reading our stdout pipe at once.
  stdout: (line) => {
    writeSync(1, line + '\n')
  },
  stderr: (line) => {
    writeSync(2, line + '\n')
  },
  stopSignal,
})
process.exit(code)

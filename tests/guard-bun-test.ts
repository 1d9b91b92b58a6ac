// `bun test` would find our *.test.ts files, run zero uvu tests and exit 0: a false green.
// This preload makes it fail loudly instead.
throw new Error('These suites use uvu: run `npm test` (bun tests/run.ts), not `bun test`.')

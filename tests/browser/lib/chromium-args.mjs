// The flags every test browser starts with, in a module of its own so that tests outside
// tests/browser (the demo's) share them without importing playwright-core from here.

/** The flags every test browser starts with (headless as root, and no background traffic, which
 * this machine's closed network refuses). */
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

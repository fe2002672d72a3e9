#!/usr/bin/env node
// Writes the public names of the npm package's four backend entries (npm/twoplane/src/
// index.node.js, node.js, wasm.js, wasm-full.js): each entry builds the one namespace of
// `buildApi` (facade.js, with message.js's names) over its backend, and ESM wants every name it
// exports written out, so each entry ends in an `export const { ... } = api;` of that namespace.
// This script writes those lists from the namespace itself (and ui-calls.js's names, for the two
// entries whose build has the UI mapping), so the names are written by hand once, where they are
// defined. Run it after adding a public name; `--check` writes nothing and exits 1 naming each
// entry whose list is not current (tests/js/entries.test.mjs runs it).
//
//   node scripts/gen-npm-entries.mjs [--check]

import { readFileSync, writeFileSync } from 'node:fs';
import { buildApi } from '../npm/twoplane/src/facade.js';
import { uiCalls } from '../npm/twoplane/src/ui-calls.js';

const SRC = new URL('../npm/twoplane/src/', import.meta.url);

// Building the namespace calls no member of the backend (only its functions do), so a backend
// with nothing but a name gives its keys. `backend` is the namespace's build name, which every
// entry exports as the backend object instead.
const API = Object.keys(buildApi({ name: 'names' })).filter((name) => name !== 'backend');
const UI = Object.keys(uiCalls({}));

/** Each entry and the names it exports from its namespace. */
const ENTRY_NAMES = {
  'index.node.js': API,
  'node.js': [...API, ...UI],
  'wasm.js': API,
  'wasm-full.js': [...API, ...UI],
};

const HEAD = [
  '// The public names of the namespace above: written by scripts/gen-npm-entries.mjs from buildApi',
  '// (and ui-calls.js), not by hand; tests/js/entries.test.mjs fails when they are not current.',
];
const BLOCK = /^\/\/ The public names of the namespace above:[^\n]*\n(?:\/\/[^\n]*\n)*export const \{\n[\s\S]*?^\} = api;$/m;

/** The block for `names`: as many names a line as fit in 100 columns. */
function block(names) {
  const lines = [];
  let line = ' ';
  for (const name of names) {
    if (line.length + name.length + 2 > 100) {
      lines.push(line);
      line = ' ';
    }
    line += ` ${name},`;
  }
  lines.push(line);
  return [...HEAD, 'export const {', ...lines, '} = api;'].join('\n');
}

const check = process.argv.includes('--check');
const stale = [];
for (const [file, names] of Object.entries(ENTRY_NAMES)) {
  const url = new URL(file, SRC);
  const text = readFileSync(url, 'utf8');
  if (!BLOCK.test(text)) {
    console.error(`npm/twoplane/src/${file} has no block of public names (a comment "${HEAD[0].slice(3, 45)}...", then export const { ... } = api;)`);
    process.exit(1);
  }
  const current = text.replace(BLOCK, block(names));
  if (text === current) continue;
  stale.push(`npm/twoplane/src/${file}`);
  if (!check) writeFileSync(url, current);
}
if (check && stale.length > 0) {
  console.error(`not current: ${stale.join(', ')}; run node scripts/gen-npm-entries.mjs`);
  process.exit(1);
}
console.log(stale.length === 0 ? 'entries: current' : `entries: wrote ${stale.join(', ')}`);

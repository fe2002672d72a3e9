// Which build a test runs against. `BACKEND=napi` is the `twoplane/node` entry (always the
// addon), `BACKEND=wasm` is `twoplane/wasm`, `BACKEND=default` is the package's Node default
// entry (index.node.js: the addon with measured routing, or the wasm build as a fallback).
// Loading is strict: a missing build fails the run instead of silently testing something else.

const ENTRIES = {
  napi: '../../npm/twoplane/src/node.js',
  wasm: '../../npm/twoplane/src/wasm.js',
  default: '../../npm/twoplane/src/index.node.js',
};

export const BACKEND = process.env.BACKEND ?? 'napi';

export async function loadBackendApi(name = BACKEND) {
  const entry = ENTRIES[name];
  if (entry === undefined) throw new Error(`BACKEND must be one of ${Object.keys(ENTRIES).join(', ')}, not ${name}`);
  try {
    return await import(entry);
  } catch (err) {
    throw new Error(`the ${name} build does not load (${err?.message ?? err}); run scripts/build-node.sh / scripts/build-wasm.sh`, { cause: err });
  }
}

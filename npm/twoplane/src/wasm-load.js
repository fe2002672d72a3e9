// How an entry over a WebAssembly build (wasm.js, wasm-full.js) instantiates its module. In a
// browser or a bundler the .wasm is fetched and compiled by streaming; from a `file:` URL (Node)
// it is read from disk and compiled synchronously, since Node's fetch does not read files. The
// entry awaits this at its top level, so the module is ready before the entry finishes evaluating
// and every export works synchronously. The module's URL stays in the entry, written as
// `new URL('…', import.meta.url)`, which is where bundlers (Vite) look for the file to bundle.

/** The instance's raw exports, for wasm-bindgen `--target web` glue (`init` its default export,
 *  `glue` its namespace) over the module at `url`. */
export async function instantiate(init, glue, url) {
  if (url.protocol === 'file:') {
    // Hidden from bundlers: this branch only ever runs where files are files.
    const fsModule = 'node:fs';
    const { readFileSync } = await import(/* @vite-ignore */ /* webpackIgnore: true */ fsModule);
    return glue.initSync({ module: readFileSync(url) });
  }
  return init({ module_or_path: url });
}

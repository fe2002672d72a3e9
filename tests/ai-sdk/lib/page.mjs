// What the Chromium tests of this folder (browser.test.mjs, browser-continue.test.mjs) share: a
// page module bundled by esbuild against one major of `ai` and `@ai-sdk/react` (the package's
// aliases) and `twoplane/ai-sdk` from the source, and a proxy from the app's origin to twoplane.
import http from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build as esbuild } from 'esbuild';

const HERE = join(dirname(fileURLToPath(import.meta.url)), '..');

/** The page module `entry` (a path under tests/ai-sdk) as one ES module's text, for `major`. */
export async function bundlePage(entry, major) {
  const out = await esbuild({
    entryPoints: [join(HERE, entry)],
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    logLevel: 'silent',
    nodePaths: [join(HERE, 'node_modules')],
    alias: {
      ai: `ai${major}`,
      '@ai-sdk/react': `ai-sdk-react${major}`,
      'twoplane/ai-sdk': join(HERE, '../../npm/twoplane/src/ai-sdk.js'),
    },
    define: { 'process.env.NODE_ENV': '"production"' },
  });
  return out.outputFiles[0].text;
}

/** `(req, res, path)`: pass the request on to `path` of the twoplane whose URL `base()` gives
 *  now (a restarted twoplane has another port), and its answer back. */
export function proxyTo(base) {
  return (req, res, path) => {
    const target = new URL(path, base());
    const upstream = http.request(target, { method: req.method, headers: { ...req.headers, host: target.host } }, (up) => {
      res.writeHead(up.statusCode, up.headers);
      up.pipe(res);
    });
    upstream.on('error', () => res.destroy());
    res.on('close', () => upstream.destroy());
    req.pipe(upstream);
  };
}

/** `(req, res, url)`: answer the routes every page app here has (the page at `/`, its bundle
 *  `js` at `/bundle.js`, and `/tp/...` passed on to twoplane at `base()`); false for any other. */
export function servePage(js, base) {
  const proxy = proxyTo(base);
  return (req, res, url) => {
    if (req.method === 'GET' && url.pathname === '/') {
      res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><meta charset="utf-8"><div id="root"></div><script type="module" src="/bundle.js"></script>');
    } else if (req.method === 'GET' && url.pathname === '/bundle.js') {
      res.writeHead(200, { 'content-type': 'text/javascript' }).end(js);
    } else if (url.pathname.startsWith('/tp/')) {
      proxy(req, res, url.pathname.slice(3) + url.search);
    } else {
      return false;
    }
    return true;
  };
}

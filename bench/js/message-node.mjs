// bench/js/message.mjs in Node, over each build in its own process (a process that loaded both
// would share the facade's type feedback between them and measure neither as an app runs it):
// `twoplane/node` (the addon), `twoplane/wasm`, and the Node default entry (routed). Run: bash
// scripts/bench-node.sh (builds first), or node bench/js/message-node.mjs after a build.
import os from 'node:os';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const ENTRY = {
  napi: '../../npm/twoplane/src/node.js',
  wasm: '../../npm/twoplane/src/wasm.js',
  default: '../../npm/twoplane/src/index.node.js',
};

const at = process.argv.indexOf('--child');
if (at >= 0) {
  const build = process.argv[at + 1];
  const tp = await import(ENTRY[build]);
  const { Accumulator } = await import('../../npm/twoplane/src/accumulator.js');
  const { runMessageBench } = await import('./message.mjs');
  console.log(`\n## ${build} (backend ${tp.default.backend}${tp.routesInUse ? `, MessageReaderCore from ${tp.routesInUse.MessageReaderCore}` : ''})`);
  runMessageBench(tp, { clock: () => Number(process.hrtime.bigint()), log: (s) => console.log(s), Accumulator });
} else {
  console.log(`twoplane message reader benchmark: node ${process.version}, ${os.cpus().length} cpu(s) (${os.cpus()[0]?.model ?? '?'}), ` +
    `load ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`);
  for (const build of Object.keys(ENTRY)) {
    const r = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--child', build], { stdio: 'inherit' });
    if (r.status !== 0) process.exit(r.status ?? 1);
  }
}

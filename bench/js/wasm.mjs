// The benchmark of bench/js/core.mjs in Node, over `twoplane/wasm` (the WebAssembly build).
// Run: bash scripts/bench-wasm.sh (builds first), or node bench/js/wasm.mjs after a build.
import * as tp from '../../npm/twoplane/src/wasm.js';
import { runBench } from './core.mjs';

console.log(`twoplane wasm benchmark in Node ${process.version} (backend ${tp.default.backend})`);
runBench(tp, { clock: () => Number(process.hrtime.bigint()), log: (s) => console.log(s) });

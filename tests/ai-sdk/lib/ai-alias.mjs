// `node --import ./lib/ai-alias.mjs` with TWOPLANE_AI=5|6|7 (or 5old|6old|7old, 6last|7last): the
// bare `ai` that the npm package's `twoplane/ai-sdk` entry imports resolves to that release (the npm
// alias `ai5`, `ai6old`, ... of this folder, see package.json and lib/majors.mjs), so one process
// runs the entry over one release of the SDK's own code.
import { register } from 'node:module';

const major = process.env.TWOPLANE_AI;
if (!/^[567](old|last)?$/.test(major ?? '')) throw new Error(`TWOPLANE_AI must be 5, 6 or 7, or one of them followed by old or last, not ${major}`);
register('./ai-alias-hooks.mjs', import.meta.url, { data: { major, base: new URL('../', import.meta.url).href } });

// `node --import ./lib/ai-alias.mjs` with TWOPLANE_AI=5|6|7: the bare `ai` that the npm package's
// `twoplane/ai-sdk` entry imports resolves to that major (the npm alias `ai5`, `ai6` or `ai7` of this
// folder), so one process runs the entry over one major of the SDK's own code.
import { register } from 'node:module';

const major = process.env.TWOPLANE_AI;
if (!['5', '6', '7'].includes(major)) throw new Error(`TWOPLANE_AI must be 5, 6 or 7, not ${major}`);
register('./ai-alias-hooks.mjs', import.meta.url, { data: { major, base: new URL('../', import.meta.url).href } });

// The majors of `ai` this package installs side by side (npm aliases, see package.json), and
// what differs between them that the recorder and the checks have to know.
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);

export const MAJORS = ['5', '6', '7'];

// package alias of `ai`, of `@ai-sdk/react`, and the language-model mock each major's `ai/test` has.
// Besides the pinned release of each major (`5`, `6`, `7`, with their `@ai-sdk/react`), the oldest
// and the newest published release of each major in twoplane/ai-sdk's peer range (`5old` 5.0.0,
// `6old` 6.0.0, `7old` 7.0.0; `5` is also the newest 5.x, `6last` 6.0.333, `7last` 7.0.185), without a
// React package: their tests drive the SDK's own `AbstractChat` (lib/chat.mjs).
const TABLE = {
  5: { ai: 'ai5', react: 'ai-sdk-react5', mock: 'MockLanguageModelV2', spec: 'v2' },
  6: { ai: 'ai6', react: 'ai-sdk-react6', mock: 'MockLanguageModelV3', spec: 'v3' },
  7: { ai: 'ai7', react: 'ai-sdk-react7', mock: 'MockLanguageModelV4', spec: 'v4' },
  '5old': { ai: 'ai5old', react: null, mock: 'MockLanguageModelV2', spec: 'v2' },
  '6old': { ai: 'ai6old', react: null, mock: 'MockLanguageModelV3', spec: 'v3' },
  '6last': { ai: 'ai6last', react: null, mock: 'MockLanguageModelV3', spec: 'v3' },
  '7old': { ai: 'ai7old', react: null, mock: 'MockLanguageModelV4', spec: 'v4' },
  '7last': { ai: 'ai7last', react: null, mock: 'MockLanguageModelV4', spec: 'v4' },
};

/** The installed version of a package alias. */
export function installedVersion(alias) {
  return JSON.parse(readFileSync(require.resolve(`${alias}/package.json`), 'utf8')).version;
}

/** Everything a script needs from one major: the `ai` module, its `ai/test`, versions. */
export async function loadMajor(major) {
  const t = TABLE[major];
  if (!t) throw new Error(`unknown major ${major}`);
  const ai = await import(t.ai);
  const test = await import(`${t.ai}/test`);
  return {
    major,
    /** The major alone ('5', '6' or '7'). */
    base: major[0],
    alias: t.ai,
    reactAlias: t.react,
    version: installedVersion(t.ai),
    reactVersion: t.react ? installedVersion(t.react) : undefined,
    ai,
    test,
    MockModel: test[t.mock],
    mockName: t.mock,
    spec: t.spec,
    // the model's finish part and usage changed shape between the provider specs
    finishPart(reason) {
      if (t.spec === 'v2') {
        return { type: 'finish', finishReason: reason, usage: { inputTokens: 12, outputTokens: 34, totalTokens: 46 } };
      }
      return {
        type: 'finish',
        finishReason: { unified: reason, raw: reason },
        usage: {
          inputTokens: { total: 12, noCache: 12, cacheRead: undefined, cacheWrite: undefined },
          outputTokens: { total: 34, text: 30, reasoning: 4 },
        },
      };
    },
  };
}

/**
 * The chunk types of the `UIMessageChunk` union, read from the installed package's type
 * declarations (the union's `type:` literals; `data-${NAME}` is reported as `data-*`).
 */
export function declaredChunkTypes(alias) {
  const pkgDir = dirname(require.resolve(`${alias}/package.json`));
  const dts = readFileSync(join(pkgDir, 'dist', 'index.d.ts'), 'utf8');
  const start = dts.indexOf('type UIMessageChunk<');
  const end = dts.indexOf('type InferUIMessageChunk<', start);
  if (start < 0 || end < 0) throw new Error(`no UIMessageChunk union in ${alias}`);
  const body = dts.slice(start, end);
  const types = new Set();
  for (const m of body.matchAll(/type: '([a-z-]+)'/g)) types.add(m[1]);
  if (/DataUIMessageChunk</.test(body)) types.add('data-*');
  return [...types];
}

/** The type a coverage table counts a chunk under. */
export function coverageKey(type) {
  return type.startsWith('data-') ? 'data-*' : type;
}

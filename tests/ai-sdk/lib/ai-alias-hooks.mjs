// The resolve hook of ai-alias.mjs: `ai` (and `ai/...`) imported from the npm package's sources
// (or from the docs' code blocks that docs.test.mjs runs) is resolved as `ai<major>` from this
// folder.
let major;
let base;

export function initialize(data) {
  major = data.major;
  base = data.base;
}

export function resolve(specifier, context, next) {
  // docs.test.mjs runs the docs' code blocks as written from a folder named `twoplane-docs-run-*`:
  // their `ai` is the chosen release, their `twoplane/ai-sdk` the package's Node entry.
  const docs = context.parentURL?.includes('/twoplane-docs-run-');
  if ((specifier === 'ai' || specifier.startsWith('ai/')) && (docs || context.parentURL?.includes('/npm/twoplane/'))) {
    return next(`ai${major}${specifier.slice(2)}`, { ...context, parentURL: `${base}package.json` });
  }
  if (docs && specifier === 'twoplane/ai-sdk') {
    return next(new URL('../../npm/twoplane/src/ai-sdk.node.js', base).href, context);
  }
  return next(specifier, context);
}

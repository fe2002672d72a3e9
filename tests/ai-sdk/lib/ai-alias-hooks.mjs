// The resolve hook of ai-alias.mjs: `ai` (and `ai/...`) imported from the npm package's sources is
// resolved as `ai<major>` from this folder.
let major;
let base;

export function initialize(data) {
  major = data.major;
  base = data.base;
}

export function resolve(specifier, context, next) {
  if ((specifier === 'ai' || specifier.startsWith('ai/')) && context.parentURL?.includes('/npm/twoplane/')) {
    return next(`ai${major}${specifier.slice(2)}`, { ...context, parentURL: `${base}package.json` });
  }
  return next(specifier, context);
}

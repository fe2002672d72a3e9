import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';
import { fileURLToPath } from 'node:url';

// `twoplane` is a link to npm/twoplane (package.json: file:../../npm/twoplane). Vite follows the
// link to its real path, from where the `ai` that `twoplane/ai-sdk` imports cannot be found;
// `dedupe` resolves it from this folder instead (one copy, the one @ai-sdk/react uses).
// `fs.allow` lets the dev server read the linked sources.
export default defineConfig({
  plugins: [react()],
  resolve: { dedupe: ['ai'] },
  server: { fs: { allow: ['.', fileURLToPath(new URL('../../npm/twoplane', import.meta.url))] } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    rollupOptions: {
      // zod ships comments Rollup cannot place and says so on every build; they cost nothing.
      onwarn(warning, warn) {
        if (warning.code === 'INVALID_ANNOTATION' && /[\\/]zod[\\/]/.test(warning.id ?? '')) return;
        warn(warning);
      },
    },
  },
});

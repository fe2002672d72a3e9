// The bundler check's app: served under /app/ by the fixture server after `vite build`.
export default {
  root: new URL('.', import.meta.url).pathname,
  base: '/app/',
  logLevel: 'warn',
  build: { outDir: 'dist', emptyOutDir: true },
};

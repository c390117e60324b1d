import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

/**
 * The web console (docs/console.md). `npm run web:dev` serves it with hot reload and sends /api to a running
 * console gateway (SVC_BACKEND_URL, default http://localhost:8080); `npm run web:build` writes web/dist, which the
 * console gateway serves.
 */
export default defineConfig({
  root: import.meta.dirname,
  plugins: [react()],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    // No inline script or style anywhere: the page's policy allows only the console's own files.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    sourcemap: true,
  },
  server: {
    proxy: { '/api': { target: process.env.SVC_BACKEND_URL ?? 'http://localhost:8080', changeOrigin: false } },
  },
});

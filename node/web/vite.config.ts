// The web interface's build: `make build` runs `vite build --config node/web/vite.config.ts`.
// Output: dist/node/web/ (served by the node at /web/, node/src/api/routes/web.ts). Everything is
// bundled: no CDN, nothing fetched at run time.
import { fileURLToPath } from 'node:url';
import preact from '@preact/preset-vite';
import { defineConfig } from 'vite';

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/web/',
  plugins: [preact()],
  logLevel: 'warn',
  build: {
    outDir: fileURLToPath(new URL('../../dist/node/web', import.meta.url)),
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: false,
    reportCompressedSize: false,
  },
});

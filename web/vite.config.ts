import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import type { Plugin, ProxyOptions } from 'vite';
import { defineConfig } from 'vitest/config';
import react from '@vitejs/plugin-react';

// In development the editor runs on Vite's port and the API on Codefy's.
// The server refuses a foreign Host (421) and a foreign Origin (403), as
// CodefyUI does, so the proxy presents itself as a same-origin client.
const target = process.env.CODEFY_SERVER ?? 'http://127.0.0.1:8000';

const sameOrigin = (ws: boolean): ProxyOptions => ({
  target,
  ws,
  changeOrigin: true,
  configure: (proxy) => {
    proxy.on('proxyReq', (req) => {
      if (req.getHeader('origin')) req.setHeader('origin', target);
    });
    proxy.on('proxyReqWs', (req) => {
      if (req.getHeader('origin')) req.setHeader('origin', target);
    });
  },
});

const proxy = { '/api': sameOrigin(false), '/ws': sameOrigin(true) };

/** Writes `<file>.gz` beside each text file of the build; `codefy serve` sends it to clients that accept gzip. */
function precompress(): Plugin {
  const walk = (dir: string): string[] =>
    readdirSync(dir).flatMap((name) => {
      const path = join(dir, name);
      return statSync(path).isDirectory() ? walk(path) : [path];
    });
  return {
    name: 'codefy-precompress',
    apply: 'build',
    closeBundle() {
      for (const file of walk('dist'))
        if (/\.(js|css|html|svg|json)$/.test(file)) writeFileSync(`${file}.gz`, gzipSync(readFileSync(file), { level: 9 }));
    },
  };
}

export default defineConfig({
  plugins: [react(), precompress()],
  server: { host: '127.0.0.1', port: 5173, proxy },
  preview: { host: '127.0.0.1', port: 4173, proxy },
  build: {
    outDir: 'dist',
    assetsDir: 'assets',
    sourcemap: false,
    chunkSizeWarningLimit: 600,
  },
  test: {
    include: ['tests/**/*.test.{ts,tsx}'],
    environment: 'node',
  },
});

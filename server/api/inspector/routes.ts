import { readFileSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';

/**
 * The inspector's static page (`/inspector`): HTML, script and style, which hold no data and so
 * need no API key. The page asks for the key and sends it as `Authorization: Bearer` on its own
 * fetches of the journal, which keeps the API's rule unchanged (docs/INSPECTOR.md).
 */
const ASSETS = {
  '/inspector': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/inspector/app.js': { file: 'app.js', type: 'text/javascript; charset=utf-8' },
  '/inspector/app.css': { file: 'app.css', type: 'text/css; charset=utf-8' },
} as const;

/** Paths the inspector serves without an API key. */
export const INSPECTOR_PATHS: ReadonlySet<string> = new Set(Object.keys(ASSETS));

// Program code and tool outputs shown by the page are hostile by design: nothing but the
// page's own files may run, load or be framed, even if a rendering bug let markup through.
const CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

export function registerInspectorRoutes(app: FastifyInstance): void {
  for (const [path, { file, type }] of Object.entries(ASSETS)) {
    // Read once at start: a few KiB, shipped beside this module (copied into dist by the build).
    const body = readFileSync(new URL(`./assets/${file}`, import.meta.url));
    app.get(path, async (_request, reply) =>
      reply
        .header('content-type', type)
        .header('content-security-policy', CONTENT_SECURITY_POLICY)
        .header('x-content-type-options', 'nosniff')
        .header('referrer-policy', 'no-referrer')
        .header('cache-control', 'no-store')
        .send(body),
    );
  }
}

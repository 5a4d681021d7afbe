// The package's build: TypeScript to JavaScript and declarations in dist/ (tsconfig.build.json),
// plus the one file the compiler does not handle, the guest prelude (read as text at run time,
// never imported). Run by `npm run build`, by `prepare` on install from a clone, and by `npm test`.
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, cpSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const dist = new URL('../dist/', import.meta.url);
rmSync(dist, { recursive: true, force: true });
// The compiler's own launcher (typescript's bin, which its exports map does not expose).
const tsc = fileURLToPath(new URL('../node_modules/typescript/bin/tsc', import.meta.url));
execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' });
copyFileSync(new URL('../runtime/guest-prelude.js', import.meta.url), new URL('runtime/guest-prelude.js', dist));
// The inspector's static page, read at run time beside server/api/inspector/routes.js.
cpSync(new URL('../server/api/inspector/assets/', import.meta.url), new URL('server/api/inspector/assets/', dist), { recursive: true });
chmodSync(new URL('cli/main.js', dist), 0o755);

// `npm run test:package`: the package as its users get it. Packs the tarball, lints it
// (publint, @arethetypeswrong/cli), installs it into a fresh project outside the repository
// from the tarball and the registry alone (with the openai SDK beside it), and there:
//   - checks that nothing was compiled at install (isolated-vm loads its prebuilt binary, no
//     node-gyp ran, no better-sqlite3: the SQLite store is node:sqlite);
//   - lays out and starts what the Dockerfile's image runs, as the image's unprivileged user;
//   - `npx ptc-emulator serve` answers the seed loop through the openai SDK, `run` runs a
//     program file, `validate` checks a scenario file, `eval` compares direct calls with PTC on
//     the example tasks;
//   - the shipped vitest and node:test examples pass, using the test helper;
//   - a consumer file importing every entry point type-checks with `tsc --init`'s settings,
//     and CommonJS can require the library.
// Runs on whichever node is first on PATH (CI: once on each Node version it pins in .ci/run)
// and says which. Prints one line per check and the figures the README and the closing notes
// quote (`figure  …`). Exit code 0 when every check passed. PTC_KEEP_PACKAGE_CHECK=1 keeps the
// temporary project.
import { execFile, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { chmodSync, chownSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const PACKAGE = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
/** The image's user: `node` in the node images. */
const IMAGE_UID = 1000;
/** The openai SDK the consumer installs beside the package: the version the repository tests with. */
const OPENAI = `openai@${PACKAGE.devDependencies.openai}`;
const NODE = `node ${process.version}`;
const run = promisify(execFile);
const children = new Set();
const results = [];
const figures = [];

/** Each server runs in a process group of its own (npx, a shell, node, its workers): killed whole. */
function killGroup(child, signal) {
  try {
    process.kill(-child.pid, signal);
  } catch {
    // Already gone.
  }
}
process.on('exit', () => {
  for (const child of children) killGroup(child, 'SIGKILL');
});
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => process.exit(130));

async function check(name, body) {
  const started = performance.now();
  try {
    await body();
    results.push({ name, ok: true });
    process.stdout.write(`ok    ${name} (${Math.round(performance.now() - started)} ms)\n`);
  } catch (error) {
    results.push({ name, ok: false });
    process.stdout.write(`FAIL  ${name}\n${indent(error instanceof Error ? (error.stack ?? error.message) : String(error))}\n`);
  }
}

function indent(text) {
  return text
    .split('\n')
    .map((line) => `      ${line}`)
    .join('\n');
}

function assert(condition, message) {
  if (!condition) throw new Error(message);
}

/** Runs a command to its end; its output in the error when it fails. */
async function sh(file, args, options = {}) {
  try {
    return await run(file, args, { maxBuffer: 64 * 1024 * 1024, timeout: 15 * 60_000, ...options });
  } catch (error) {
    throw new Error(`${file} ${args.join(' ')} failed (${error.code ?? error.signal}):\n${error.stdout ?? ''}${error.stderr ?? ''}`);
  }
}

async function freePort() {
  const probe = createServer();
  probe.listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const { port } = probe.address();
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/**
 * Starts a server process and waits for its start line (`API at http://…/v1`); returns the base
 * URL, a way to stop it and its output. Reaped whatever happens.
 */
async function startServer(file, args, options) {
  const started = performance.now();
  const child = spawn(file, args, { ...options, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  child.once('exit', () => children.delete(child));
  let output = '';
  const baseURL = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no start line within 60 s:\n${output}`)), 60_000);
    const onData = (chunk) => {
      output += chunk;
      const match = /API at (http:\/\/[^\s]+\/v1)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code} before its start line:\n${output}`));
    });
  });
  return {
    baseURL,
    startupMs: performance.now() - started,
    output: () => output,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      const exited = once(child, 'exit');
      killGroup(child, 'SIGTERM');
      const [code] = await exited;
      return code;
    },
  };
}

/** The instructions of the Dockerfile's final stage, by keyword (the last of each). */
function finalStage(dockerfile) {
  const logical = dockerfile
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith('#'));
  const lastFrom = logical.findLastIndex((line) => /^FROM\s/i.test(line));
  const stage = { ENV: {}, LABEL: {}, COPY: [], RUN: [] };
  for (const line of logical.slice(lastFrom + 1)) {
    const [, keyword, rest] = /^(\w+)\s+(.*)$/.exec(line);
    const upper = keyword.toUpperCase();
    if (upper === 'ENV' || upper === 'LABEL') {
      for (const [, key, quoted, plain] of rest.matchAll(/([\w.-]+)=(?:"([^"]*)"|(\S+))/g)) stage[upper][key] = quoted ?? plain;
    } else if (upper === 'COPY' || upper === 'RUN') stage[upper].push(rest);
    else stage[upper] = rest;
  }
  return stage;
}

async function fetchJson(url, init) {
  const response = await fetch(url, init);
  return { status: response.status, body: await response.json() };
}

/**
 * What node-gyp leaves in a package it built: build/config.gypi and a Makefile from configure,
 * build/Release (or Debug) with the .node files from make. Prebuilt binaries live elsewhere
 * (isolated-vm's in prebuilds/). Also every better-sqlite3 installed, at any depth.
 */
function compiledTraces(nodeModules) {
  const built = [];
  const sqlite = [];
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (!entry.isDirectory()) continue; // symlinks (.bin) included: not followed
      const path = join(dir, entry.name);
      if (entry.name === 'better-sqlite3' && dir.endsWith(`${sep}node_modules`)) sqlite.push(relative(nodeModules, path));
      if (entry.name === 'build') {
        const names = readdirSync(path);
        if (names.some((name) => ['config.gypi', 'Makefile', 'Release', 'Debug'].includes(name)))
          built.push(`${relative(nodeModules, path)}/ (${names.join(', ')})`);
      }
      walk(path);
    }
  };
  walk(nodeModules);
  return { built, sqlite };
}

process.stdout.write(`package check on ${NODE} (${process.execPath}), modules ABI ${process.versions.modules}\n`);

const scratch = mkdtempSync(join(tmpdir(), 'ptc-package-'));
// The image's user must reach the project, as it reaches /app in the image.
chmodSync(scratch, 0o755);
const project = join(scratch, 'app');
mkdirSync(project);
let tarball;
const installed = join(project, 'node_modules', 'ptc-emulator');
/** The output of the install, install scripts' included (--foreground-scripts). */
let installOutput = '';

try {
  await check('npm pack makes a tarball of the built package and its docs only', async () => {
    const { stdout } = await sh('npm', ['pack', '--json', '--pack-destination', scratch], { cwd: ROOT });
    const [info] = JSON.parse(stdout);
    tarball = join(scratch, info.filename);
    const files = info.files.map((file) => file.path);
    for (const required of [
      'LICENSE',
      'README.md',
      'package.json',
      'dist/cli/main.js',
      'dist/runtime/guest-prelude.js',
      'dist/server/api/inspector/assets/index.html',
      'dist/server/api/inspector/assets/app.js',
      'dist/server/api/inspector/assets/app.css',
      'dist/runtime/worker/worker-main.js',
      'dist/server/index.d.ts',
      'dist/testing/index.d.ts',
    ]) {
      assert(files.includes(required), `the tarball lacks ${required}`);
    }
    const stray = files.filter((file) => /^(test|bench|\.ci|scripts|node_modules)\//.test(file) || (/\.ts$/.test(file) && !/\.d\.ts$/.test(file)));
    assert(stray.length === 0, `the tarball holds files users do not need: ${stray.slice(0, 10).join(', ')}`);
    figures.push(
      `package: ${info.filename}, ${(info.size / 1024).toFixed(0)} KiB packed, ${(info.unpackedSize / 1024).toFixed(0)} KiB unpacked, ${info.entryCount} files`,
    );
  });

  await check('publint finds nothing', async () => {
    const { stdout } = await sh(process.execPath, [join(ROOT, 'node_modules/publint/src/cli.js'), '--strict'], { cwd: ROOT });
    assert(/All good/.test(stdout), stdout);
  });

  await check('@arethetypeswrong/cli finds nothing for ESM consumers (the package is ESM only)', async () => {
    await sh(process.execPath, [join(ROOT, 'node_modules/@arethetypeswrong/cli/dist/index.js'), tarball, '--profile', 'esm-only', '--no-emoji', '--no-color']);
  });

  await check(`the tarball and ${OPENAI} install into a fresh project from the registry alone`, async () => {
    writeFileSync(join(project, 'package.json'), `${JSON.stringify({ name: 'ptc-consumer', private: true, type: 'module' }, null, 2)}\n`);
    const started = performance.now();
    // What the Dockerfile's build stage runs, the tarball without dev dependencies, with the SDK
    // a user calls it through beside it (pure JavaScript). Install scripts in the foreground so
    // that their output (node-gyp's, were it run) is in ours.
    const { stdout, stderr } = await sh('npm', ['install', '--omit=dev', '--no-audit', '--no-fund', '--foreground-scripts', tarball, OPENAI], { cwd: project });
    installOutput = stdout + stderr;
    figures.push(
      `install (${NODE}): ${((performance.now() - started) / 1000).toFixed(1)} s (the tarball and ${OPENAI} into a fresh project, npm cache as found)`,
    );
    assert(statSync(join(installed, 'dist/cli/main.js')).isFile(), 'no dist/cli/main.js installed');
    assert(!readdirSync(join(project, 'node_modules')).includes('tsx'), 'tsx was installed: something in production still needs it');
    const openai = JSON.parse(readFileSync(join(project, 'node_modules/openai/package.json'), 'utf8'));
    assert(openai.version === PACKAGE.devDependencies.openai, `openai ${openai.version} installed, not ${PACKAGE.devDependencies.openai}`);
  });

  await check('nothing was compiled at install: isolated-vm loads its prebuilt binary, node-gyp did not run, no better-sqlite3', async () => {
    assert(installOutput, 'the install did not complete');
    // node-gyp prints `gyp info it worked if it ends with ok` first whatever it then does.
    const gyp = installOutput.split('\n').filter((line) => /^gyp (info|WARN|ERR!) /.test(line));
    // The scripts npm ran print as `> name@version event` and `> command`.
    const scripts = [...installOutput.matchAll(/^> (\S+@\S+) (preinstall|install|postinstall)\n> (.*)$/gm)].map(
      ([, id, event, command]) => `${id} ${event}: ${command}`,
    );
    figures.push(`install scripts run (${NODE}): ${scripts.length === 0 ? 'none' : scripts.join('; ')}`);
    assert(gyp.length === 0, `node-gyp ran at install:\n${gyp.slice(0, 20).join('\n')}`);
    const { built, sqlite } = compiledTraces(join(project, 'node_modules'));
    assert(built.length === 0, `node-gyp build output in node_modules: ${built.join('; ')}`);
    assert(sqlite.length === 0, `better-sqlite3 is installed (${sqlite.join(', ')}): the SQLite store is node:sqlite`);
    // node-gyp-build's own answer to "which binary would isolated-vm load here?", from the project.
    const probe = [
      "const { createRequire } = require('node:module');",
      "const manifest = require.resolve('isolated-vm/package.json');",
      'const ivm = require(manifest);',
      "console.log(JSON.stringify({ version: ivm.version, binary: createRequire(manifest)('node-gyp-build').path(require('node:path').dirname(manifest)) }));",
    ].join('\n');
    const { stdout } = await sh(process.execPath, ['-e', probe], { cwd: project });
    const { version, binary } = JSON.parse(stdout);
    assert(version === PACKAGE.dependencies['isolated-vm'], `isolated-vm ${version} installed, not ${PACKAGE.dependencies['isolated-vm']}`);
    const fromIsolatedVm = relative(join(project, 'node_modules/isolated-vm'), binary);
    assert(
      fromIsolatedVm.startsWith(`prebuilds${sep}`) && fromIsolatedVm.includes(`.abi${process.versions.modules}.`),
      `isolated-vm would load ${binary}, not its prebuilt binary for ABI ${process.versions.modules}`,
    );
    figures.push(`isolated-vm ${version} binary (${NODE}): ${fromIsolatedVm}`);
  });

  const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
  const stage = finalStage(dockerfile);
  /** The oldest Node major the package runs on (engines), which the image has. */
  const oldest = /^>=\s*(\d+)(?:\.\d+)*$/.exec(PACKAGE.engines.node)?.[1];

  await check('the Dockerfile builds on the Node the package starts at, both stages, with no compiler and with --no-node-snapshot', async () => {
    const bases = [...dockerfile.matchAll(/^FROM\s+(\S+)/gim)].map(([, image]) => image);
    assert(oldest, `engines.node is ${PACKAGE.engines.node}, not one lower bound`);
    assert(
      bases.length === 2 && bases.every((image) => image === `node:${oldest}-bookworm-slim`),
      `the stages build on ${bases.join(', ')}, not node:${oldest}-bookworm-slim both`,
    );
    const compiler = /apt-get install[^\n]*\s(python3?|make|g\+\+|gcc|build-essential)(?=\s|$)/m.exec(dockerfile.replace(/\\\n/g, ' '));
    assert(!compiler, `the Dockerfile installs ${compiler?.[1]}: nothing is compiled any more`);
    assert(JSON.parse(stage.ENTRYPOINT).includes('--no-node-snapshot'), 'the ENTRYPOINT lacks --no-node-snapshot, which isolated-vm requires');
  });

  const canSwitchUser = process.getuid?.() === 0;
  if (!canSwitchUser) process.stdout.write("skip  the image layout checks run as root only (they start the server as the image's user)\n");
  else {
    if (process.versions.node.split('.')[0] !== oldest)
      process.stdout.write(`note  the image layout checks run its files on ${NODE}; the image has node ${oldest}\n`);
    const dataDir = join(scratch, 'data');
    // The image's paths, here: /app is the project, the data volume a directory beside it.
    const local = (path) => path.replace(/^\/app(?=\/|$)/, project).replace(new RegExp(`^${stage.ENV.PTC_DATA_DIR}(?=/|$)`), dataDir);
    const entrypoint = JSON.parse(stage.ENTRYPOINT);
    const command = [...entrypoint, ...JSON.parse(stage.CMD)].map(local);
    // The image's user runs this node, as it runs the image's; a node it cannot reach (one under
    // /root, as CI's cache of Node binaries is) is copied where it can.
    let imageNode = process.execPath;
    if (spawnSync(imageNode, ['--version'], { uid: IMAGE_UID, gid: IMAGE_UID, cwd: scratch }).status !== 0) {
      imageNode = join(scratch, 'node-bin', 'node');
      mkdirSync(dirname(imageNode), { mode: 0o755 });
      copyFileSync(process.execPath, imageNode);
      chmodSync(imageNode, 0o755);
    }
    const imageEnv = async () => ({
      PATH: `${dirname(imageNode)}:${process.env.PATH}`,
      ...stage.ENV,
      HOST: '127.0.0.1',
      PORT: String(await freePort()),
      PTC_DATA_DIR: dataDir,
    });
    const asImageUser = { uid: IMAGE_UID, gid: IMAGE_UID, cwd: local(stage.WORKDIR) };

    await check('the Dockerfile declares a non-root user, a data volume it owns, a healthcheck with a start period and OCI labels', async () => {
      assert(stage.USER === 'node', `USER is ${stage.USER}, not node`);
      assert(stage.VOLUME === stage.ENV.PTC_DATA_DIR, `VOLUME ${stage.VOLUME} is not PTC_DATA_DIR ${stage.ENV.PTC_DATA_DIR}`);
      assert(
        stage.RUN.some((line) => line.includes(`chown node:node ${stage.ENV.PTC_DATA_DIR}`)),
        'nothing gives the data directory to the node user',
      );
      assert(/--start-period=\d+s/.test(stage.HEALTHCHECK ?? ''), 'the HEALTHCHECK has no start period');
      assert(stage.LABEL['org.opencontainers.image.version'] === PACKAGE.version, `the image's version label is not ${PACKAGE.version}`);
      for (const label of ['title', 'description', 'licenses', 'documentation'])
        assert(stage.LABEL[`org.opencontainers.image.${label}`], `no org.opencontainers.image.${label} label`);
      assert(
        stage.COPY.some((line) => line.includes('--from=build /app/node_modules /app/node_modules')),
        "the final stage does not copy the build stage's install",
      );
      assert(!/tsx/.test(stage.ENTRYPOINT + stage.CMD), 'the image runs TypeScript through tsx');
      assert(statSync(command[2]).isFile(), `the entry point ${command[2]} is not in the install`);
    });

    await check("the image's command serves as its user, keeps state in the volume, passes its healthcheck and restarts with it", async () => {
      mkdirSync(dataDir);
      chownSync(dataDir, IMAGE_UID, IMAGE_UID);
      const env = await imageEnv();
      let server = await startServer(imageNode, command.slice(1), { ...asImageUser, env });
      assert(command[0] === 'node', `the image's command starts with ${command[0]}, not node`);
      const created = await fetchJson(`${server.baseURL}/responses`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'ptc-emulator', input: 'Run:\n```js\ntext("stored")\n```', tools: [{ type: 'programmatic_tool_calling' }] }),
      });
      assert(
        created.status === 200 && created.body.output.some((item) => item.type === 'program_output' && item.status === 'completed'),
        JSON.stringify(created.body),
      );
      const healthcheck = JSON.parse(/CMD\s+(\[.*\])\s*$/.exec(stage.HEALTHCHECK)[1]);
      await sh(imageNode, healthcheck.slice(1), { ...asImageUser, env });
      assert((await server.stop()) === 0, `the server did not drain cleanly:\n${server.output()}`);
      for (const file of ['ptc-emulator.sqlite', 'fingerprint.key']) {
        const stat = statSync(join(dataDir, file));
        assert(stat.uid === IMAGE_UID, `${file} is not owned by the image's user`);
      }
      assert((statSync(join(dataDir, 'fingerprint.key')).mode & 0o077) === 0, 'the key file is readable by others');
      server = await startServer(imageNode, command.slice(1), { ...asImageUser, env: await imageEnv() });
      const again = await fetchJson(`${server.baseURL}/responses/${created.body.id}`);
      assert(again.status === 200 && again.body.id === created.body.id, `the stored response did not survive a restart: ${JSON.stringify(again.body)}`);
      await server.stop();
    });

    await check("a data volume the image's user cannot write is one line and exit code 2", async () => {
      const rootOwned = join(scratch, 'root-owned');
      mkdirSync(rootOwned, { mode: 0o755 });
      const child = spawn(imageNode, command.slice(1), {
        ...asImageUser,
        env: { ...(await imageEnv()), PTC_DATA_DIR: rootOwned },
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      children.add(child);
      let stderr = '';
      child.stderr.on('data', (chunk) => (stderr += chunk));
      const [code] = await once(child, 'exit');
      assert(code === 2, `exit code ${code}, not 2`);
      assert(stderr.trim().split('\n').length === 1 && /PTC_DATA_DIR .*EACCES/.test(stderr), `not one line naming the directory: ${stderr}`);
    });
  }

  await check("the consumer's dev dependencies install beside it (vitest, typescript, @types/node)", async () => {
    const pins = ['vitest', 'vite', 'typescript', '@types/node'].map((name) => `${name}@${PACKAGE.devDependencies[name]}`);
    await sh('npm', ['install', '--save-dev', '--no-audit', '--no-fund', ...pins], { cwd: project });
  });

  const npx = (args, options = {}) => sh('npx', ['--no-install', ...args], { cwd: project, ...options });

  await check('npx ptc-emulator serve answers the seed loop through the openai SDK', async () => {
    const server = await startServer('npx', ['--no-install', 'ptc-emulator', 'serve', '--port', '0', '--store', 'memory'], {
      cwd: project,
      env: { ...process.env, LOG_LEVEL: 'warn' },
    });
    figures.push(`npx ptc-emulator serve, spawn to start line: ${server.startupMs.toFixed(0)} ms (one run; npm run bench:startup for medians)`);
    try {
      copyFileSync(join(installed, 'examples/sdk-store-false.mjs'), join(project, 'sdk-store-false.mjs'));
      const { stdout } = await sh(process.execPath, ['sdk-store-false.mjs'], { cwd: project, env: { ...process.env, OPENAI_BASE_URL: server.baseURL } });
      // What the example's header says it prints: the autopilot's final message, no scenario set.
      const expected = /→ (.*)$/m.exec(readFileSync(join(installed, 'examples/sdk-store-false.mjs'), 'utf8'))?.[1];
      assert(expected !== undefined && stdout.trim() === expected, `printed ${stdout}, expected ${expected}`);
      const index = await fetchJson(server.baseURL.replace(/\/v1$/, '/'));
      assert(index.status === 200 && index.body.base_url === server.baseURL, `GET / answered ${JSON.stringify(index.body)}`);
    } finally {
      await server.stop();
    }
  });

  await check('npx ptc-emulator run runs a program file with its tools and answers', async () => {
    const examples = join(installed, 'examples/run');
    const { stdout } = await npx([
      'ptc-emulator',
      'run',
      join(examples, 'inventory.js'),
      '--tools',
      join(examples, 'tools.json'),
      '--outputs',
      join(examples, 'answers.json'),
    ]);
    assert(/program_output completed: \{"sku":"sku_123","reorder":true,"shortfall":28\}/.test(stdout), stdout);
  });

  await check('npx ptc-emulator validate checks a scenario file', async () => {
    const { stdout } = await npx(['ptc-emulator', 'validate', join(installed, 'examples/scenario/inventory.yaml')]);
    assert(/1 rule; valid/.test(stdout), stdout);
  });

  await check('npx ptc-emulator eval prints the direct-versus-PTC table of the example tasks, every run correct', async () => {
    const { stdout } = await npx(['ptc-emulator', 'eval', join(installed, 'examples/eval/tasks.yaml')]);
    assert(/\| all tasks +\| direct +\| 3\/3 /.test(stdout) && /\| +\| ptc +\| 3\/3 /.test(stdout) && stdout.includes('ptc ÷ direct'), stdout);
  });

  await check('a vitest file using the test helper passes, with no Node flag set', async () => {
    for (const file of ['inventory.test.mjs', 'vitest.config.mjs']) copyFileSync(join(installed, 'examples/vitest', file), join(project, file));
    const { stdout } = await npx(['vitest', 'run', '--config', 'vitest.config.mjs'], { env: { ...process.env, CI: 'true' } });
    assert(/1 passed/.test(stdout), stdout);
  });

  await check('a node:test file using the test helper passes', async () => {
    mkdirSync(join(project, 'node-test'));
    copyFileSync(join(installed, 'examples/node-test/inventory.test.mjs'), join(project, 'node-test/inventory.test.mjs'));
    // A file, not the directory: since Node 21 --test takes files and globs. TAP, as Node 23 and
    // later report spec by default even into a pipe.
    const { stdout } = await sh(process.execPath, ['--test', '--test-reporter=tap', 'node-test/inventory.test.mjs'], { cwd: project });
    assert(/# pass 1/.test(stdout) && /# fail 0/.test(stdout), stdout);
  });

  await check("a consumer importing ., ./runtime, ./testing and ./vitest type-checks with tsc --init's settings", async () => {
    await npx(['tsc', '--init']);
    writeFileSync(
      join(project, 'consumer.ts'),
      [
        "import { buildServer, type ModelFunction, type BuildServerOptions } from 'ptc-emulator';",
        "import { runProgram, DEFAULT_LIMITS, MissingNodeFlagError, type ProgramLimits } from 'ptc-emulator/runtime';",
        "import { startEmulator, type RunningEmulator } from 'ptc-emulator/testing';",
        "import { usePtcEmulator } from 'ptc-emulator/vitest';",
        '',
        "const model: ModelFunction = (context) => (context.phase === 'user_turn' ? { type: 'program', code: 'text(1)' } : undefined);",
        "const options: BuildServerOptions = { model, store: 'memory' };",
        'const limits: ProgramLimits = { ...DEFAULT_LIMITS, maxCalls: 10 };',
        'export async function main(): Promise<string | undefined> {',
        '  const app = await buildServer(options);',
        '  await app.close();',
        '  const emulator: RunningEmulator = await startEmulator({ model, config: { limits } });',
        '  const entries = await emulator.journal();',
        '  await emulator.close();',
        "  const result = await runProgram('text(entries)', { limits: { maxCalls: entries.length + 1 } });",
        "  return result.status === 'completed' ? result.result : String(new MissingNodeFlagError().message);",
        '}',
        'export const hook: typeof usePtcEmulator = usePtcEmulator;',
        '',
      ].join('\n'),
    );
    await npx(['tsc', '--noEmit', '-p', '.']);
  });

  await check('CommonJS code can require the library (require of ES modules)', async () => {
    const { stdout } = await sh(
      process.execPath,
      ['-e', "const t = require('ptc-emulator/testing'); const r = require('ptc-emulator/runtime'); console.log(typeof t.startEmulator, typeof r.runProgram)"],
      { cwd: project },
    );
    assert(stdout.trim() === 'function function', stdout);
  });
} finally {
  if (process.env.PTC_KEEP_PACKAGE_CHECK === '1') process.stdout.write(`kept ${scratch}\n`);
  else rmSync(scratch, { recursive: true, force: true });
}

for (const figure of figures) process.stdout.write(`figure  ${figure}\n`);
const failed = results.filter((result) => !result.ok).length;
process.stdout.write(`package check: ${results.length - failed} passed, ${failed} failed\n`);
// Whatever a failed check left running ends here, and so does this script.
for (const child of children) killGroup(child, 'SIGKILL');
process.exit(failed === 0 ? 0 : 1);

import { spawn } from 'node:child_process';
import { hasRequiredNodeFlag, REQUIRED_NODE_FLAG } from '../runtime/index.ts';

/** Set in the re-executed process: the parent that started it is the CLI itself. */
const REEXEC_MARK = 'PTC_EMULATOR_REEXEC';

/**
 * Makes sure this process may make isolates: when Node was started without
 * `--no-node-snapshot`, runs the same command again in a child process that has it, and
 * returns a promise that never settles (the parent exits with the child's status). The child
 * is tied to the parent by an IPC channel: if the parent is killed, even with SIGKILL, the
 * channel closes and the child stops as on SIGTERM, so nothing is left running.
 */
export function ensureNodeFlag(): Promise<void> {
  if (hasRequiredNodeFlag()) {
    if (process.env[REEXEC_MARK] === '1' && process.channel) {
      process.channel.unref();
      process.once('disconnect', () => process.kill(process.pid, 'SIGTERM'));
    }
    return Promise.resolve();
  }
  if (process.env[REEXEC_MARK] === '1') {
    // The flag was passed and is still missing: something strips it. Say so rather than loop.
    process.stderr.write(`ptc-emulator: could not start Node with ${REQUIRED_NODE_FLAG}; run: node ${REQUIRED_NODE_FLAG} ${process.argv[1] ?? ''}\n`);
    process.exit(2);
  }
  const child = spawn(process.execPath, [REQUIRED_NODE_FLAG, ...process.execArgv, process.argv[1]!, ...process.argv.slice(2)], {
    stdio: ['inherit', 'inherit', 'inherit', 'ipc'],
    env: { ...process.env, [REEXEC_MARK]: '1' },
  });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(signal, () => child.kill(signal));
  }
  child.once('exit', (code, signal) => {
    process.exitCode = code ?? (signal === 'SIGINT' ? 130 : 1);
    process.exit();
  });
  return new Promise(() => {});
}

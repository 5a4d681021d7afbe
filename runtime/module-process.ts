import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/**
 * A child process running the module at `entry`, over an IPC channel. From the TypeScript
 * sources (an entry ending in `.ts`, the server run under tsx) it is started with tsx's loader;
 * from the build (`.js`) as it is. It inherits no environment but PATH: it serves the server.
 */
export function startModuleProcess(entry: URL): ChildProcess {
  const path = fileURLToPath(entry);
  return fork(path, [], {
    execArgv: path.endsWith('.ts') ? ['--import', import.meta.resolve('tsx')] : [],
    env: { PATH: process.env.PATH ?? '' },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    serialization: 'advanced',
  });
}

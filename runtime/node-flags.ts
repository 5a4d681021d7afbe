/**
 * isolated-vm 5.0.4 on Node 20 needs Node's startup snapshot off in every process that makes
 * isolates: with it on, isolates work until some later operation crashes the whole process.
 * So a process without the flag is told so the first time it would make an isolate.
 */
import { MissingNodeFlagError, REQUIRED_NODE_FLAG } from './errors.ts';

export { REQUIRED_NODE_FLAG };

/** Whether this process was started with the flag, on its command line or in NODE_OPTIONS. */
export function hasRequiredNodeFlag(execArgv: readonly string[] = process.execArgv, nodeOptions: string = process.env.NODE_OPTIONS ?? ''): boolean {
  return execArgv.includes(REQUIRED_NODE_FLAG) || nodeOptions.split(/\s+/).includes(REQUIRED_NODE_FLAG);
}

/** Throws MissingNodeFlagError unless the process may make isolates. */
export function assertCanMakeIsolates(): void {
  if (!hasRequiredNodeFlag()) throw new MissingNodeFlagError();
}

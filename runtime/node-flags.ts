/**
 * isolated-vm needs Node's startup snapshot off in every process that makes isolates: with it
 * on, V8 shares read-only heap data between isolates built from different snapshots (Node's and
 * isolated-vm's), and some later operation can crash the whole process. isolated-vm 7.0.1 on
 * Node 24 and 26 still documents the requirement; a 20 s stress of 1,500 isolates beside worker
 * threads without the flag did not crash here, which proves nothing, so the flag stays. A process
 * without it is told so the first time it would make an isolate.
 */
import { MissingNodeFlagError, REQUIRED_NODE_FLAG } from './errors.ts';

export { REQUIRED_NODE_FLAG };

/** Whether this process was started with the flag, on its command line or in NODE_OPTIONS. */
export function hasRequiredNodeFlag(execArgv: readonly string[] = process.execArgv, nodeOptions: string = process.env.NODE_OPTIONS ?? ''): boolean {
  return execArgv.includes(REQUIRED_NODE_FLAG) || nodeOptions.split(/\s+/).includes(REQUIRED_NODE_FLAG);
}

let confirmed = false;

/** Throws MissingNodeFlagError unless the process may make isolates. */
export function assertCanMakeIsolates(): void {
  // The flags a process started with do not change: once seen, not looked up again (reading
  // NODE_OPTIONS from the environment costs several microseconds of every program's start).
  if (confirmed) return;
  if (!hasRequiredNodeFlag()) throw new MissingNodeFlagError();
  confirmed = true;
}

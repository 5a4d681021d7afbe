import { Worker, type ResourceLimits } from 'node:worker_threads';

/**
 * A worker thread running the module at `entry`. From the TypeScript sources (an entry ending
 * in `.ts`, the server run under tsx) the thread does not inherit tsx's loader, so it registers
 * the loader before importing the entry; from the build (`.js`) the entry is started as it is.
 */
export function startModuleThread(entry: URL, resourceLimits?: ResourceLimits): Worker {
  const options = resourceLimits ? { resourceLimits } : {};
  if (!entry.pathname.endsWith('.ts')) return new Worker(entry, options);
  const tsx = JSON.stringify(import.meta.resolve('tsx/esm/api'));
  return new Worker(`import(${tsx}).then(({ register }) => { register(); return import(${JSON.stringify(entry.href)}); })`, { eval: true, ...options });
}

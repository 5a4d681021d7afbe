// The server of `npm run bench:hostile`, in a process of its own so that the event-loop delay it
// reports is the server's alone (the clients run in the parent). Started by fork with IPC: it
// sends {port} once listening; {op: 'reset'} clears its event-loop histogram, {op: 'read'}
// answers {p50Ms, maxMs} since the last reset. It exits when its parent's channel closes.
import { monitorEventLoopDelay } from 'node:perf_hooks';
// The built server, as the package runs it: a worker it replaces costs what it costs an installed
// server, not a TypeScript transpile (`npm run bench:hostile` builds first). Imported by a URL
// computed here, so that type-checking a clone that was never built does not look for it.
const built = new URL('../dist/server/app.js', import.meta.url).href;
const { buildServer } = (await import(built)) as typeof import('../server/app.ts');

const env = JSON.parse(process.env['BENCH_SERVER_ENV'] ?? '{}') as Record<string, string>;
const app = await buildServer({ env, logger: false });
await app.listen({ host: '127.0.0.1', port: 0 });
const address = app.server.address();
if (address === null || typeof address === 'string') throw new Error('no port');

// 10 ms resolution: what is measured is blocking of tens of milliseconds and more.
const delay = monitorEventLoopDelay({ resolution: 10 });
delay.enable();

process.on('message', (message: { op: 'reset' | 'read' }) => {
  if (message.op === 'reset') {
    delay.reset();
    process.send!({ op: 'reset' });
  } else {
    // The histogram counts the timer's own resolution in: the delay is what exceeds it.
    const excess = (nanoseconds: number): number => Math.max(0, nanoseconds / 1e6 - 10);
    process.send!({ op: 'read', p50Ms: excess(delay.percentile(50)), maxMs: excess(delay.max) });
  }
});
process.on('disconnect', () => {
  void app.close().then(() => process.exit(0));
});
process.send!({ port: address.port });

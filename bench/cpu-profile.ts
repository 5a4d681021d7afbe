import { fileURLToPath } from 'node:url';

/**
 * Reading a V8 `.cpuprofile` (what `node --cpu-prof` writes): the self time of each function,
 * summed over the samples taken in a window, and the same grouped by where the code lives (a
 * folder of ours, a package, Node's internals, the collector), so that a run says where its
 * time went without a flame-graph viewer.
 */

const ROOT = fileURLToPath(new URL('../', import.meta.url));

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
}

export interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  /** Microseconds, on the clock of process.hrtime (CLOCK_MONOTONIC). */
  readonly startTime: number;
  readonly endTime: number;
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

export interface SelfTime {
  /** What is timed: a function (`name file:line`) or an area. */
  readonly what: string;
  readonly micros: number;
}

export interface ProfileSummary {
  /** Sampled time in the window, idle excluded. */
  readonly busyMicros: number;
  readonly idleMicros: number;
  readonly functions: readonly SelfTime[];
  readonly areas: readonly SelfTime[];
  /** Whether the window held no sample, and the whole profile was read instead. */
  readonly wholeProfile: boolean;
}

/** Where a function's code lives: a folder of ours, a package, a module of Node's, or V8's own work. */
export function areaOf(url: string, functionName: string): string {
  if (url === '') {
    if (functionName === '(garbage collector)') return 'V8: garbage collector';
    if (functionName === '(program)') return 'V8: native (program)';
    if (functionName === '(idle)') return 'idle';
    return functionName === '' ? 'V8: unnamed' : `V8: ${functionName}`;
  }
  const path = url.startsWith('file://') ? fileURLToPath(url) : url;
  if (path.startsWith('node:')) {
    const module = path.slice('node:'.length);
    // Node's internals grouped by their subsystem: internal/streams, _http_server, …
    return `node: ${module.startsWith('internal/') ? module.split('/').slice(0, 2).join('/') : module}`;
  }
  const inPackage = /[\\/]node_modules[\\/]((?:@[^\\/]+[\\/])?[^\\/]+)/.exec(path);
  if (inPackage) return `package: ${inPackage[1]!.replace('\\', '/')}`;
  if (path.startsWith(ROOT)) {
    const relative = path.slice(ROOT.length).split(/[\\/]/);
    return `ours: ${relative.slice(0, Math.min(3, relative.length - 1)).join('/')}`;
  }
  return path;
}

function functionLabel(node: ProfileNode): string {
  const { functionName, url, lineNumber } = node.callFrame;
  const path = url.startsWith('file://') ? fileURLToPath(url) : url;
  const file = path.startsWith(ROOT) ? path.slice(ROOT.length) : path.replace(/^.*[\\/]node_modules[\\/]/, '');
  return url === '' ? functionName || '(V8, unnamed)' : `${functionName || '(anonymous)'} ${file}:${lineNumber + 1}`;
}

/** The self time of every function and area over the samples taken from `fromMicros` to `toMicros` (the whole profile when none fall there). */
export function summarizeProfile(profile: CpuProfile, fromMicros = -Infinity, toMicros = Infinity): ProfileSummary {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const selfById = new Map<number, number>();
  const add = (inWindow: (at: number) => boolean): void => {
    let at = profile.startTime;
    for (let index = 0; index < profile.samples.length; index++) {
      const delta = profile.timeDeltas[index] ?? 0;
      at += delta;
      if (!inWindow(at)) continue;
      // A sample's time is the gap to the next one: what ran since it was taken.
      const next = profile.timeDeltas[index + 1] ?? 0;
      const id = profile.samples[index]!;
      selfById.set(id, (selfById.get(id) ?? 0) + next);
    }
  };
  add((at) => at >= fromMicros && at <= toMicros);
  const wholeProfile = selfById.size === 0;
  if (wholeProfile) add(() => true);

  const functions = new Map<string, number>();
  const areas = new Map<string, number>();
  let idleMicros = 0;
  let busyMicros = 0;
  for (const [id, micros] of selfById) {
    const node = byId.get(id);
    if (!node) continue;
    const area = areaOf(node.callFrame.url, node.callFrame.functionName);
    if (area === 'idle') {
      idleMicros += micros;
      continue;
    }
    busyMicros += micros;
    const label = functionLabel(node);
    functions.set(label, (functions.get(label) ?? 0) + micros);
    areas.set(area, (areas.get(area) ?? 0) + micros);
  }
  const sorted = (totals: Map<string, number>): SelfTime[] => [...totals].map(([what, micros]) => ({ what, micros })).sort((a, b) => b.micros - a.micros);
  return { busyMicros, idleMicros, functions: sorted(functions), areas: sorted(areas), wholeProfile };
}

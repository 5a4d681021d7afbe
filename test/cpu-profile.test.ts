import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { areaOf, type CpuProfile, summarizeProfile } from '../bench/cpu-profile.ts';

/** bench:profile's reading of a .cpuprofile, on a profile made by hand whose sums are known. */

const ours = pathToFileURL(new URL('../server/engine/usage.ts', import.meta.url).pathname).href;
const theirs = pathToFileURL(new URL('../node_modules/zod/v4/core/schemas.js', import.meta.url).pathname).href;

const PROFILE: CpuProfile = {
  nodes: [
    { id: 1, callFrame: { functionName: '(root)', url: '', lineNumber: -1 } },
    { id: 2, callFrame: { functionName: 'countUsage', url: ours, lineNumber: 9 } },
    { id: 3, callFrame: { functionName: 'parse', url: theirs, lineNumber: 0 } },
    { id: 4, callFrame: { functionName: '(idle)', url: '', lineNumber: -1 } },
    { id: 5, callFrame: { functionName: 'write', url: 'node:fs', lineNumber: 866 } },
  ],
  startTime: 1_000,
  endTime: 2_000,
  // Taken at 1010, 1110, 1210, 1310, 1410, 1510: each sample's time is the gap to the next.
  samples: [2, 3, 2, 4, 5, 2],
  timeDeltas: [10, 100, 100, 100, 100, 100],
};

describe('summarizeProfile', () => {
  it('sums self time by function and by area, idle apart', () => {
    const summary = summarizeProfile(PROFILE);
    expect(summary.wholeProfile).toBe(false);
    expect(summary.idleMicros).toBe(100);
    // The last sample has no next one: it counts nothing.
    expect(summary.busyMicros).toBe(400);
    expect(summary.functions).toEqual([
      { what: 'countUsage server/engine/usage.ts:10', micros: 200 },
      { what: 'parse node_modules/zod/v4/core/schemas.js:1', micros: 100 },
      { what: 'write node:fs:867', micros: 100 },
    ]);
    expect(summary.areas).toEqual([
      { what: 'ours: server/engine', micros: 200 },
      { what: 'package: zod', micros: 100 },
      { what: 'node: fs', micros: 100 },
    ]);
  });

  it('counts only the samples taken in the window, and the whole profile when none were', () => {
    expect(summarizeProfile(PROFILE, 1_100, 1_250).functions).toEqual([
      { what: 'parse node_modules/zod/v4/core/schemas.js:1', micros: 100 },
      { what: 'countUsage server/engine/usage.ts:10', micros: 100 },
    ]);
    const outside = summarizeProfile(PROFILE, 5_000, 6_000);
    expect(outside.wholeProfile).toBe(true);
    expect(outside.busyMicros).toBe(400);
  });
});

describe('areaOf', () => {
  it.each([
    ['', '(garbage collector)', 'V8: garbage collector'],
    ['node:internal/streams/readable', 'read', 'node: internal/streams'],
    ['node:_http_server', 'x', 'node: _http_server'],
    [pathToFileURL(new URL('../node_modules/@fastify/websocket/index.js', import.meta.url).pathname).href, 'x', 'package: @fastify/websocket'],
    [pathToFileURL(new URL('../runtime/canonical-json.ts', import.meta.url).pathname).href, 'x', 'ours: runtime'],
  ])('%s (%s) is %s', (url, name, area) => {
    expect(areaOf(url, name)).toBe(area);
  });
});

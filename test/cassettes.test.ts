import { cpSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import { toResponseInputItems } from 'openai/lib/responses/ResponseInputItems';
import type { Response, ResponseInputItem, ResponseStreamEvent } from 'openai/resources/responses/responses';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CassetteDirectory } from '../server/engine/stand-ins/cassettes/cassette-directory.ts';
import { CassetteError, readEntry, writeEntry, type CassetteEntry } from '../server/engine/stand-ins/cassettes/cassette-entry.ts';
import { expectSdkError, rejectionOf } from './support/api-errors.ts';
import { startServer, type RunningServer } from './support/server.ts';

// Record against a second emulator (the upstream, scripted by a scenario file), then replay
// with the upstream gone: the client's loop must see the same items, ids aside.

const UPSTREAM_KEY = 'sk-upstream-DISTINCTIVEupstreamKEY0123456789';
const CLIENT_KEY = 'sk-client-DISTINCTIVEclientKEY9876543210';
const PAYLOAD_TOKEN = 'sk-proj-PAYLOADtokenINaMESSAGE0123456789';
const SCENARIOS = fileURLToPath(new URL('./fixtures/cassette-upstream.yaml', import.meta.url));

const TURNS = ['Compare inventory with demand for sku_123.', 'Now sku_456, one call after the other.', `Thanks. (My key is ${PAYLOAD_TOKEN}, do not keep it.)`];

const stock: Record<string, number> = { sku_123: 42, sku_456: 5 };
const wanted: Record<string, number> = { sku_123: 31, sku_456: 12 };
const implementations: Record<string, (args: { sku: string }) => unknown> = {
  get_inventory: ({ sku }) => ({ sku, available_units: stock[sku] ?? 0 }),
  get_demand: ({ sku }) => ({ sku, requested_units: wanted[sku] ?? 0 }),
};

const skuTool = (name: string, output: Record<string, unknown>): OpenAI.Responses.Tool => ({
  type: 'function',
  name,
  description: `Return an object with sku and ${Object.keys(output)[1]}.`,
  parameters: { type: 'object', properties: { sku: { type: 'string' } }, required: ['sku'], additionalProperties: false },
  output_schema: { type: 'object', properties: output, required: Object.keys(output), additionalProperties: false },
  allowed_callers: ['programmatic'],
  strict: true,
});
const tools: OpenAI.Responses.Tool[] = [
  skuTool('get_inventory', { sku: { type: 'string' }, available_units: { type: 'number' } }),
  skuTool('get_demand', { sku: { type: 'string' }, requested_units: { type: 'number' } }),
  { type: 'programmatic_tool_calling' },
];

function clientOf(baseURL: string): OpenAI {
  // The client's own key: the recorder must not keep it (nor send it upstream: it sends its own).
  return new OpenAI({ apiKey: CLIENT_KEY, baseURL, maxRetries: 0 });
}

async function outputsFor(response: Response): Promise<ResponseInputItem[]> {
  return response.output
    .filter((item) => item.type === 'function_call')
    .map((call) => ({
      type: 'function_call_output' as const,
      call_id: call.call_id,
      output: JSON.stringify(implementations[call.name]!(JSON.parse(call.arguments))),
      caller: call.caller,
    }));
}

/** The seed's store: false loop, over three user turns: every item resent, `caller` copied. */
async function threeTurnLoop(client: OpenAI): Promise<Response[]> {
  const responses: Response[] = [];
  const input: ResponseInputItem[] = [];
  for (const turn of TURNS) {
    input.push({ role: 'user', content: turn });
    while (true) {
      const response = await client.responses.create({ model: 'gpt-ptc', store: false, input, tools });
      responses.push(response);
      if (response.status !== 'completed') throw new Error(`Response ended with status ${response.status}`);
      input.push(...toResponseInputItems(response.output));
      const outputs = await outputsFor(response);
      if (outputs.length === 0) break;
      input.push(...outputs);
    }
  }
  return responses;
}

/** The same conversation streamed, continuing stored responses with previous_response_id. */
async function streamedLoop(client: OpenAI): Promise<{ responses: Response[]; events: string[][] }> {
  const responses: Response[] = [];
  const events: string[][] = [];
  let previous: string | undefined;
  for (const turn of TURNS.slice(0, 2)) {
    let input: ResponseInputItem[] = [{ role: 'user', content: turn }];
    while (true) {
      const stream = await client.responses.create({ model: 'gpt-ptc', input, tools, stream: true, ...(previous ? { previous_response_id: previous } : {}) });
      const types: string[] = [];
      let final: Response | undefined;
      for await (const event of stream as AsyncIterable<ResponseStreamEvent>) {
        types.push(event.type);
        if (event.type === 'response.completed') final = event.response;
      }
      if (!final) throw new Error(`no response.completed in ${types.join(', ')}`);
      responses.push(final);
      events.push(types);
      previous = final.id;
      input = await outputsFor(final);
      if (input.length === 0) break;
    }
  }
  return { responses, events };
}

/**
 * Ids differ between instances (each makes its own): every id, call_id, caller_id and
 * fingerprint becomes the order in which it was first seen, so the structure still shows
 * which call belongs to which program (docs/DEVIATIONS.md).
 */
function normalised(responses: readonly Response[]): unknown {
  const seen = new Map<string, string>();
  const idOf = (value: string): string => {
    if (!seen.has(value)) seen.set(value, `#${seen.size + 1}`);
    return seen.get(value)!;
  };
  const walk = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(walk);
    if (value === null || typeof value !== 'object') return value;
    return Object.fromEntries(
      Object.entries(value).map(([name, element]) => [
        name,
        typeof element === 'string' && ['id', 'call_id', 'caller_id', 'fingerprint'].includes(name) ? idOf(element) : walk(element),
      ]),
    );
  };
  return responses.map((response) => ({ status: response.status, output_text: response.output_text, output: walk(response.output) }));
}

interface JournalEntry {
  readonly path: string;
  readonly programs?: readonly { path: string; outcome: string }[];
  readonly cassette?: { entries: string[]; divergences: { entry: string; step: string; expected: unknown; actual: unknown }[] };
}

async function journal(server: RunningServer): Promise<JournalEntry[]> {
  const answer = await fetch(`${server.baseURL}/emulator/journal`);
  return ((await answer.json()) as { data: JournalEntry[] }).data;
}

function cassetteFiles(dir: string): string[] {
  return readdirSync(dir).filter((file) => file.endsWith('.yaml'));
}

const servers: RunningServer[] = [];
async function started(options: Parameters<typeof startServer>[0]): Promise<RunningServer> {
  const server = await startServer(options);
  servers.push(server);
  return server;
}
async function stop(server: RunningServer): Promise<void> {
  servers.splice(servers.indexOf(server), 1);
  await server.close();
}
afterEach(async () => {
  // Replay servers end with their test; the recorded conversation's are ended in afterAll.
  await Promise.all(servers.splice(2).map((server) => server.close()));
});

const dirs: string[] = [];
function freshDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'ptc-cassettes-'));
  dirs.push(dir);
  return dir;
}
afterAll(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
  if (!process.env.KEEP_CASSETTES) for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const replayEnv = (dir: string, strict = false): NodeJS.ProcessEnv => ({ PTC_REPLAY: dir, PTC_REPLAY_STRICT: String(strict) });

describe('record a three-turn PTC conversation, then replay it with the upstream gone', () => {
  const dir = freshDir();
  let recorded: Response[];

  beforeAll(async () => {
    const upstream = await started({ scenarios: SCENARIOS, config: { apiKey: UPSTREAM_KEY } });
    const recorder = await started({ env: { PTC_RECORD: dir, PTC_UPSTREAM: upstream.baseURL, PTC_UPSTREAM_API_KEY: UPSTREAM_KEY } });
    recorded = await threeTurnLoop(clientOf(recorder.baseURL));
    await stop(upstream);
    await stop(recorder);
  });

  it('recorded what the upstream answered: parallel calls, pauses, final messages', () => {
    expect(recorded.map((response) => response.output.map((item) => item.type))).toEqual([
      ['reasoning', 'program', 'function_call', 'function_call'],
      ['program_output', 'message'],
      ['program', 'function_call'],
      ['function_call'],
      ['program_output', 'message'],
      ['message'],
    ]);
    expect(recorded.map((response) => response.output_text).filter(Boolean)).toEqual([
      'sku_123 is short by 0 units.',
      'sku_456 is short by 7 units.',
      'You are welcome.',
    ]);
  });

  it("wrote one entry per model decision, with the programs' calls and outputs as expectations", () => {
    const entries = cassetteFiles(dir).map((file) => ({ file, ...(parseYaml(readFileSync(join(dir, file), 'utf8')) as CassetteEntry) }));
    expect(entries.map((entry) => `${entry.key.turn} ${entry.key.phase}`).sort()).toEqual([
      '1 after_program',
      '1 user_turn',
      '2 after_program',
      '2 user_turn',
      '3 user_turn',
    ]);
    const first = entries.find((entry) => entry.key.turn === 1 && entry.key.phase === 'user_turn')!;
    expect(first.key).toMatchObject({
      model: 'gpt-ptc',
      instructions: null,
      tools: ['get_inventory', 'get_demand'],
      messages: [{ role: 'user', text: TURNS[0] }],
    });
    expect(first.decision).toMatchObject({ reasoning: 'Both lookups at once.', program: expect.stringContaining('Promise.all') });
    expect(first.expect).toEqual({
      calls: [
        { name: 'get_inventory', arguments: { sku: 'sku_123' }, batch: 1 },
        { name: 'get_demand', arguments: { sku: 'sku_123' }, batch: 1 },
      ],
      output: { status: 'completed', result: '{"sku":"sku_123","shortage_units":0}' },
    });
    const second = entries.find((entry) => entry.key.turn === 2 && entry.key.phase === 'user_turn')!;
    expect(second.expect!.calls.map((call) => `${call.name}@${call.batch}`)).toEqual(['get_inventory@1', 'get_demand@2']);
    // The same last user message twice would still be two keys: the messages before it are in the key.
    expect(second.key.messages.map((message) => message.role)).toEqual(['user', 'assistant', 'user']);
  });

  it('kept no credential: no key, no Authorization, the payload token redacted', () => {
    const bytes = cassetteFiles(dir)
      .map((file) => readFileSync(join(dir, file), 'utf8'))
      .join('\n');
    for (const secret of [UPSTREAM_KEY, CLIENT_KEY, PAYLOAD_TOKEN, 'DISTINCTIVE', 'PAYLOADtoken']) expect(bytes).not.toContain(secret);
    expect(bytes).not.toMatch(/authorization|bearer/i);
    expect(bytes).toContain('Thanks. (My key is [REDACTED], do not keep it.)');
  });

  it('replays the conversation: the same items, the recorded programs run here, no divergence', async () => {
    const replay = await started({ env: replayEnv(dir) });
    const replayed = await threeTurnLoop(clientOf(replay.baseURL));
    expect(normalised(replayed)).toEqual(normalised(recorded));
    const entries = (await journal(replay)).filter((entry) => entry.path === '/v1/responses').reverse();
    expect(entries).toHaveLength(6);
    // The programs ran in this server's isolates: started, paused, resumed, completed.
    expect(entries.flatMap((entry) => (entry.programs ?? []).map((program) => program.outcome))).toEqual([
      'paused',
      'completed',
      'paused',
      'paused',
      'completed',
    ]);
    expect(entries.flatMap((entry) => entry.cassette?.divergences ?? [])).toEqual([]);
    expect(entries.filter((entry) => (entry.cassette?.entries.length ?? 0) > 0)).toHaveLength(5);
  });

  it('reports a hand-edited recorded call as a divergence, with the step; strict fails the response', async () => {
    const edited = freshDir();
    cpSync(dir, edited, { recursive: true });
    const file = cassetteFiles(edited).find((name) => name.startsWith('turn1-user-turn-'))!;
    const entry = parseYaml(readFileSync(join(edited, file), 'utf8')) as { expect: { calls: { arguments: { sku: string } }[] } };
    entry.expect.calls[1]!.arguments.sku = 'sku_999';
    writeFileSync(join(edited, file), stringifyYaml(entry));

    const lenient = await started({ env: replayEnv(edited) });
    await threeTurnLoop(clientOf(lenient.baseURL));
    const divergences = (await journal(lenient)).flatMap((journalEntry) => journalEntry.cassette?.divergences ?? []);
    expect(divergences).toEqual([
      {
        entry: file,
        program: expect.stringMatching(/^call_/),
        step: 'call 2 (batch 1)',
        expected: { name: 'get_demand', arguments: { sku: 'sku_999' }, batch: 1 },
        actual: { name: 'get_demand', arguments: { sku: 'sku_123' }, batch: 1 },
      },
    ]);

    const strict = await started({ env: replayEnv(edited, true) });
    const error = await rejectionOf(threeTurnLoop(clientOf(strict.baseURL)));
    expectSdkError(error, { code: 'cassette_divergence', mentions: [file, 'call 2 (batch 1)', 'sku_999'] });
  });

  it('serves an entry edited or removed while the server runs from the next request on', async () => {
    const live = freshDir();
    cpSync(dir, live, { recursive: true });
    const replay = await started({ env: replayEnv(live) });
    const client = clientOf(replay.baseURL);
    expect((await threeTurnLoop(client)).at(-1)!.output_text).toBe('You are welcome.');

    // A hand edit in place (the file keeps its inode), as an editor writing over it does.
    const file = cassetteFiles(live).find((name) => name.startsWith('turn3-user-turn-'))!;
    const entry = parseYaml(readFileSync(join(live, file), 'utf8')) as CassetteEntry;
    entry.decision.message = 'You are most welcome.';
    writeFileSync(join(live, file), stringifyYaml(entry));
    expect((await threeTurnLoop(client)).at(-1)!.output_text).toBe('You are most welcome.');

    rmSync(join(live, file));
    expectSdkError(await rejectionOf(threeTurnLoop(client)), { code: 'cassette_miss', mentions: ['turn 3', 'nearest: '] });
  });

  it('answers a request no entry matches with a loud 404 naming the key and the nearest entries', async () => {
    const replay = await started({ env: replayEnv(dir) });
    const error = await rejectionOf(
      clientOf(replay.baseURL).responses.create({ model: 'gpt-ptc', input: 'Compare inventory with demand for sku_789.', tools }),
    );
    expectSdkError(error, {
      code: 'cassette_miss',
      mentions: ['turn 1', 'phase user_turn', '"Compare inventory with demand for sku_789."', 'nearest: turn1-user-turn-', 'differs in messages'],
    });
    // Same message, another turn: the earlier messages are part of the key.
    const later = await rejectionOf(
      clientOf(replay.baseURL).responses.create({
        model: 'gpt-ptc',
        input: [
          { role: 'user', content: 'Hello.' },
          { role: 'user', content: TURNS[0]! },
        ],
        tools,
      }),
    );
    expectSdkError(later, { code: 'cassette_miss', mentions: ['turn 2'] });
  });
});

/** An entry answering `text` as the first user message with `answer`. */
function messageEntry(text: string, answer: string): CassetteEntry {
  return {
    key: { model: 'gpt-ptc', instructions: null, tools: [], tools_sha256: 'none', turn: 1, phase: 'user_turn', messages: [{ role: 'user', text }] },
    decision: { message: answer },
  };
}

describe("the replay's cassette directory", () => {
  /** A directory of three entries, read through a parser that notes each file it parses. */
  function watched(): { dir: string; files: string[]; directory: CassetteDirectory; parsed: string[] } {
    const dir = freshDir();
    const files = ['one', 'two', 'three'].map((word) => writeEntry(dir, messageEntry(`Say ${word}.`, `${word}!`)));
    const parsed: string[] = [];
    const directory = new CassetteDirectory(dir, (from, file) => {
      parsed.push(file);
      return readEntry(from, file);
    });
    return { dir, files, directory, parsed };
  }

  it('parses each file once while nothing changes', () => {
    const { files, directory, parsed } = watched();
    const first = directory.entries();
    expect(first.map((loaded) => loaded.entry.decision.message).sort()).toEqual(['one!', 'three!', 'two!']);
    expect([...parsed].sort()).toEqual([...files].sort());
    const again = directory.entries();
    expect(parsed).toHaveLength(3);
    // The very objects parsed the first time, not equal copies.
    again.forEach((loaded, index) => expect(loaded).toBe(first[index]));
  });

  it('parses again only the file whose stat changed, even an edit of the same size', () => {
    const { dir, files, directory, parsed } = watched();
    const [one, two, three] = files as [string, string, string];
    // A whole second, so that a copy's mtime can be set to exactly the same.
    const SECOND = new Date('2026-01-01T00:00:00Z');
    utimesSync(join(dir, three), SECOND, SECOND);
    directory.entries();
    const messageOf = (file: string): string | undefined => directory.entries().find((loaded) => loaded.file === file)!.entry.decision.message;
    const sameSize = (file: string, from: string, to: string): string => {
      const text = readFileSync(join(dir, file), 'utf8');
      expect(text).toContain(from);
      return text.replace(from, to);
    };

    // In place (same inode, same size): the mtime tells; it is set apart so that no clock tick decides.
    const before = statSync(join(dir, one));
    writeFileSync(join(dir, one), sameSize(one, 'one!', 'ONE!'));
    utimesSync(join(dir, one), before.atime, new Date(before.mtimeMs + 60_000));
    expect(messageOf(one)).toBe('ONE!');
    expect(parsed.slice(3)).toEqual([one]);

    // Renamed over the old file (as writeEntry and most editors save), its old mtime kept: the inode tells.
    const old = statSync(join(dir, three), { bigint: true });
    writeFileSync(join(dir, '.three.tmp'), sameSize(three, 'three!', 'THREE!'));
    utimesSync(join(dir, '.three.tmp'), SECOND, SECOND);
    renameSync(join(dir, '.three.tmp'), join(dir, three));
    const now = statSync(join(dir, three), { bigint: true });
    expect([now.size, now.mtimeNs]).toEqual([old.size, old.mtimeNs]);
    expect(now.ino).not.toBe(old.ino);
    expect(messageOf(three)).toBe('THREE!');
    expect(parsed.slice(4)).toEqual([three]);

    // Removed and added files: the listing decides, and only the new file is parsed.
    rmSync(join(dir, two));
    const added = writeEntry(dir, messageEntry('Say four.', 'four!'));
    expect(
      directory
        .entries()
        .map((loaded) => loaded.file)
        .sort(),
    ).toEqual(
      files
        .filter((file) => file !== two)
        .concat(added)
        .sort(),
    );
    expect(parsed.slice(5)).toEqual([added]);
  });

  it('fails naming a file that stops being an entry, and serves it again once fixed', () => {
    const { dir, files, directory } = watched();
    directory.entries();
    const path = join(dir, files[0]!);
    const good = readFileSync(path, 'utf8');
    writeFileSync(path, 'key: [unclosed\n');
    expect(() => directory.entries()).toThrow(CassetteError);
    expect(() => directory.entries()).toThrow(path);
    writeFileSync(path, good);
    expect(directory.entries()).toHaveLength(3);
  });
});

describe('streaming record and replay', () => {
  it('records a streamed conversation (previous_response_id) and replays the same events and items', async () => {
    const dir = freshDir();
    const upstream = await startServer({ scenarios: SCENARIOS, config: { apiKey: UPSTREAM_KEY } });
    let recorded: Awaited<ReturnType<typeof streamedLoop>>;
    try {
      const recorder = await startServer({ env: { PTC_RECORD: dir, PTC_UPSTREAM: upstream.baseURL, PTC_UPSTREAM_API_KEY: UPSTREAM_KEY } });
      try {
        recorded = await streamedLoop(clientOf(recorder.baseURL));
      } finally {
        await recorder.close();
      }
    } finally {
      await upstream.close();
    }
    // A streamed Response has no output_text (the SDK adds it to parsed bodies only): read the messages.
    const texts = recorded.responses.flatMap((response) =>
      response.output.flatMap((item) => (item.type === 'message' ? item.content.map((part) => (part.type === 'output_text' ? part.text : '')) : [])),
    );
    expect(texts).toEqual(['sku_123 is short by 0 units.', 'sku_456 is short by 7 units.']);
    expect(cassetteFiles(dir)).toHaveLength(4);

    const replay = await startServer({ env: replayEnv(dir) });
    try {
      const replayed = await streamedLoop(clientOf(replay.baseURL));
      expect(replayed.events).toEqual(recorded.events);
      expect(normalised(replayed.responses)).toEqual(normalised(recorded.responses));
      expect((await journal(replay)).flatMap((entry) => entry.cassette?.divergences ?? [])).toEqual([]);
    } finally {
      await replay.close();
    }
  });
});

/** Turn 1 as background responses, polled until they finish, continuing with previous_response_id. */
async function backgroundLoop(client: OpenAI): Promise<Response[]> {
  const responses: Response[] = [];
  let input: ResponseInputItem[] = [{ role: 'user', content: TURNS[0]! }];
  let previous: string | undefined;
  while (true) {
    let response = await client.responses.create({ model: 'gpt-ptc', input, tools, background: true, ...(previous ? { previous_response_id: previous } : {}) });
    while (response.status === 'queued' || response.status === 'in_progress') {
      await new Promise((resolve) => setTimeout(resolve, 20));
      response = await client.responses.retrieve(response.id);
    }
    if (response.status !== 'completed') throw new Error(`Response ended with status ${response.status}`);
    responses.push(response);
    previous = response.id;
    input = await outputsFor(response);
    if (input.length === 0) return responses;
  }
}

describe('background record and replay', () => {
  it('records background responses once a poll shows them finished, and replays them', async () => {
    const dir = freshDir();
    const upstream = await startServer({ scenarios: SCENARIOS, config: { apiKey: UPSTREAM_KEY } });
    let recorded: Response[];
    try {
      const recorder = await startServer({ env: { PTC_RECORD: dir, PTC_UPSTREAM: upstream.baseURL, PTC_UPSTREAM_API_KEY: UPSTREAM_KEY } });
      try {
        recorded = await backgroundLoop(clientOf(recorder.baseURL));
      } finally {
        await recorder.close();
      }
    } finally {
      await upstream.close();
    }
    expect(recorded.map((response) => response.output.map((item) => item.type))).toEqual([
      ['reasoning', 'program', 'function_call', 'function_call'],
      ['program_output', 'message'],
    ]);
    expect(
      cassetteFiles(dir)
        .map((file) => file.split('-').slice(0, 3).join('-'))
        .sort(),
    ).toEqual(['turn1-after-program', 'turn1-user-turn']);

    const replay = await startServer({ env: replayEnv(dir) });
    try {
      expect(normalised(await backgroundLoop(clientOf(replay.baseURL)))).toEqual(normalised(recorded));
    } finally {
      await replay.close();
    }
  });
});

describe('record mode with the upstream down', () => {
  it('answers 502 upstream_unavailable naming the upstream, and writes no entry', async () => {
    const dir = freshDir();
    // An upstream that listened once and is gone: its port refuses connections.
    const upstream = await started({ scenarios: SCENARIOS, config: { apiKey: UPSTREAM_KEY } });
    const gone = upstream.baseURL;
    await stop(upstream);
    const recorder = await started({ env: { PTC_RECORD: dir, PTC_UPSTREAM: gone, PTC_UPSTREAM_API_KEY: UPSTREAM_KEY } });
    const error = await rejectionOf(clientOf(recorder.baseURL).responses.create({ model: 'gpt-ptc', input: TURNS[0]!, tools }));
    expectSdkError(error, { code: 'upstream_unavailable', mentions: [gone] });
    expect(cassetteFiles(dir)).toEqual([]);
  });
});

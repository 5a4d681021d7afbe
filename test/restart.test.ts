import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type OpenAI from 'openai';
import { toResponseInputItems } from 'openai/lib/responses/ResponseInputItems';
import type { Response, ResponseInputItem } from 'openai/resources/responses/responses';
import { afterEach, describe, expect, it } from 'vitest';
import { functionCallsOf, inlineProgram, programOutputOf, programTools } from './support/programs.ts';
import { spawnServer, type ServerProcess } from './support/server-process.ts';

const TOOLS = programTools('lookup');
const CODE = 'const a = await tools.lookup({q: "first"}); const b = await tools.lookup({q: a}); text({a, b, r: Math.random()})';

const running: ServerProcess[] = [];
const directories: string[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((server) => server.kill()));
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

async function start(env: Record<string, string>): Promise<ServerProcess> {
  const server = await spawnServer(env);
  running.push(server);
  return server;
}

function dataDir(): string {
  const directory = mkdtempSync(join(tmpdir(), 'ptc-restart-'));
  directories.push(directory);
  return directory;
}

function answer(call: OpenAI.Responses.ResponseFunctionToolCall): ResponseInputItem {
  return { type: 'function_call_output', call_id: call.call_id, output: `seen ${JSON.parse(call.arguments).q}`, caller: call.caller ?? null };
}

describe('a conversation survives a restart of the server between two turns', () => {
  it('with store: false: the new process resumes the program from the resent items', async () => {
    const env = { PTC_STORE: 'memory', PTC_DATA_DIR: dataDir() };
    const first = await start(env);
    const input: ResponseInputItem[] = [{ role: 'user', content: inlineProgram(CODE) }];
    const turn1 = await first.client.responses.create({ model: 'm', store: false, input, tools: TOOLS });
    input.push(...toResponseInputItems(turn1.output), ...functionCallsOf(turn1).map(answer));
    await first.kill();

    const second = await start(env);
    const turn2 = await second.client.responses.create({ model: 'm', store: false, input, tools: TOOLS });
    expect(functionCallsOf(turn2).map((call) => call.arguments)).toEqual(['{"q":"seen first"}']);
    input.push(...toResponseInputItems(turn2.output), ...functionCallsOf(turn2).map(answer));
    const turn3 = await second.client.responses.create({ model: 'm', store: false, input, tools: TOOLS });
    expect(JSON.parse(programOutputOf(turn3)!.result)).toMatchObject({ a: 'seen first', b: 'seen seen first' });
    expect(turn3.output_text).toBe(programOutputOf(turn3)!.result);
  });

  it('with store: true on SQLite: the new process continues from previous_response_id and still serves the old responses', async () => {
    const env = { PTC_STORE: 'sqlite', PTC_DATA_DIR: dataDir() };
    const first = await start(env);
    const turn1 = await first.client.responses.create({ model: 'm', input: inlineProgram(CODE), tools: TOOLS });
    await first.kill();

    const second = await start(env);
    const turn2 = await second.client.responses.create({ model: 'm', previous_response_id: turn1.id, input: functionCallsOf(turn1).map(answer), tools: TOOLS });
    const turn3 = await second.client.responses.create({ model: 'm', previous_response_id: turn2.id, input: functionCallsOf(turn2).map(answer), tools: TOOLS });
    expect(JSON.parse(programOutputOf(turn3)!.result)).toMatchObject({ a: 'seen first', b: 'seen seen first' });
    const { output_text: _, ...stored } = await second.client.responses.retrieve(turn1.id);
    const { output_text: __, ...original } = turn1;
    expect(stored).toEqual(original);
    const items = await second.client.responses.inputItems.list(turn2.id);
    expect(items.data.map((item) => item.type)).toEqual(['function_call_output']);
  });
});

describe('store: false persists nothing of the request', () => {
  it('leaves no content in the SQLite files or the logs, while store: true content does land there', async () => {
    const directory = dataDir();
    const server = await start({ PTC_STORE: 'sqlite', PTC_DATA_DIR: directory, LOG_LEVEL: 'trace' });
    const secret = 'CANARY-7f3a9c';
    const kept = 'KEPT-51c2e8';
    const conversation = async (store: boolean, marker: string): Promise<Response> => {
      const input: ResponseInputItem[] = [{ role: 'user', content: inlineProgram(`const r = await tools.lookup({q: "${marker}-q"}); text("${marker}-" + r)`) }];
      const turn1 = await server.client.responses.create({ model: 'm', store, input, tools: TOOLS, instructions: `${marker}-instructions` });
      const calls = functionCallsOf(turn1);
      const next = { type: 'function_call_output' as const, call_id: calls[0]!.call_id, output: `${marker}-output`, caller: calls[0]!.caller ?? null };
      return store
        ? server.client.responses.create({ model: 'm', previous_response_id: turn1.id, input: [next], tools: TOOLS })
        : server.client.responses.create({ model: 'm', store, input: [...input, ...toResponseInputItems(turn1.output), next], tools: TOOLS });
    };
    expect((await conversation(false, secret)).output_text).toBe(`${secret}-${secret}-output`);
    expect((await conversation(true, kept)).output_text).toBe(`${kept}-${kept}-output`);
    await server.stop();

    const files = readdirSync(directory).map((name) => readFileSync(join(directory, name)).toString('latin1'));
    const everything = [...files, server.output()].join('\n');
    // The positive control: the same search finds what store: true kept, so the check can fail.
    expect(everything).toContain(kept);
    expect(everything).not.toContain(secret);
  });
});

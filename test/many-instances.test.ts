import { randomUUID } from 'node:crypto';
import type OpenAI from 'openai';
import { toResponseInputItems } from 'openai/lib/responses/ResponseInputItems';
import type { Response, ResponseInputItem } from 'openai/resources/responses/responses';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { functionCallsOf, inlineProgram, programOutputOf, programTools } from './support/programs.ts';
import { startTestRedis } from './support/redis.ts';
import { spawnServer, type ServerProcess } from './support/server-process.ts';

const redis = await startTestRedis();

const TOOLS = programTools('step');
// Three pauses, a branch on a result and a random draw: every turn depends on all earlier ones.
const CODE =
  'let total = 0; for (let i = 1; i <= 3; i++) total += Number(await tools.step({i, total})); if (total > 5) text({total, big: true, r: Math.random()}); else text({total})';

function answer(call: OpenAI.Responses.ResponseFunctionToolCall): ResponseInputItem {
  return { type: 'function_call_output', call_id: call.call_id, output: String(JSON.parse(call.arguments).i * 2), caller: call.caller ?? null };
}

describe.skipIf(!redis)("two server processes sharing one Redis continue each other's conversations", () => {
  let instances: [ServerProcess, ServerProcess];
  beforeAll(async () => {
    // The same key on both, as a deployment of several instances must have; each its own process.
    const env = {
      PTC_STORE: 'redis',
      REDIS_URL: redis!.url,
      PTC_REDIS_PREFIX: redis!.keyPrefix,
      PTC_FINGERPRINT_KEY: randomUUID(),
      PTC_DATA_DIR: '/nonexistent',
    };
    instances = [await spawnServer(env), await spawnServer(env)];
  });
  afterAll(async () => {
    await Promise.all(instances.map((instance) => instance.kill()));
    await redis?.stop();
  });

  /** The instance serving request `turn`: they take turns. */
  const at = (turn: number): ServerProcess => instances[turn % 2]!;

  it('with store: false, alternating request by request', async () => {
    const input: ResponseInputItem[] = [{ role: 'user', content: inlineProgram(CODE) }];
    let response: Response | undefined;
    for (let turn = 0; turn < 10; turn++) {
      response = await at(turn).client.responses.create({ model: 'm', store: false, input, tools: TOOLS });
      input.push(...toResponseInputItems(response.output));
      const calls = functionCallsOf(response);
      if (calls.length === 0) break;
      input.push(...calls.map(answer));
    }
    expect(JSON.parse(programOutputOf(response!)!.result)).toMatchObject({ total: 12, big: true });
    expect(response!.output.at(-1)?.type).toBe('message');
  });

  it('with store: true, alternating request by request through previous_response_id', async () => {
    let response = await at(0).client.responses.create({ model: 'm', input: inlineProgram(CODE), tools: TOOLS });
    const ids = [response.id];
    for (let turn = 1; functionCallsOf(response).length > 0; turn++) {
      response = await at(turn).client.responses.create({
        model: 'm',
        previous_response_id: response.id,
        input: functionCallsOf(response).map(answer),
        tools: TOOLS,
      });
      ids.push(response.id);
    }
    expect(ids).toHaveLength(4);
    expect(JSON.parse(programOutputOf(response)!.result)).toMatchObject({ total: 12, big: true });
    // Either instance serves any stored response, and a delete on one is seen by the other.
    const { output_text: _, ...fromOther } = await at(1).client.responses.retrieve(ids[0]!);
    expect(fromOther.id).toBe(ids[0]);
    await at(0).client.responses.delete(ids[1]!);
    await expect(at(1).client.responses.retrieve(ids[1]!)).rejects.toMatchObject({ status: 404, code: 'response_not_found' });
  });

  it('gives the same items whichever instance resumes', async () => {
    const input: ResponseInputItem[] = [{ role: 'user', content: inlineProgram(CODE) }];
    const first = await at(0).client.responses.create({ model: 'm', store: false, input, tools: TOOLS });
    input.push(...toResponseInputItems(first.output), ...functionCallsOf(first).map(answer));
    const [fromA, fromB] = await Promise.all(instances.map((instance) => instance.client.responses.create({ model: 'm', store: false, input, tools: TOOLS })));
    expect(fromB!.output).toEqual(fromA!.output);
  });
});

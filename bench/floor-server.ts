// The bare server of `npm run bench:floor`: the floor under what the emulator's HTTP path costs
// a seed conversation. It answers the two requests of the seed conversation (load-client.ts) with
// the same output items as the emulator, its programs run by the same engine, made from the same
// settings (createProgramEngine: the workers, their pinning, the limits, the isolates made ahead),
// in the same time zone, with the seed's tools read as the server reads them. It always runs the
// seed's program, and trusts the `program` item sent back. Everything else the emulator does per
// request is left out: no validation of the body beyond Fastify's JSON parse, no sealed
// fingerprint or call ids, no store, no journal, no usage, no log lines, no turn gate. So a
// figure it reaches is one no change to the server's own code can pass; the gap between the two
// is what that code costs. Run as a child process (bench/load-server.ts): PORT and HOST as the
// CLI reads them, the rest from the environment as loadConfig reads it. Not a server for use.
import { randomUUID } from 'node:crypto';
import Fastify from 'fastify';
import type { ProgramEvent, ProgramSpec, RecordedCall } from '../runtime/index.ts';
import { WorkerPool } from '../runtime/index.ts';
import { loadConfig } from '../server/platform/config.ts';
import { createProgramEngine } from '../server/platform/program-engine.ts';
import { SEED_PROGRAM, SEED_PROGRAM_TOOLS } from './seed.ts';

// As the CLI's serve: isolates made after this see UTC.
process.env['TZ'] = 'UTC';
const config = loadConfig(process.env);
const engine = await createProgramEngine(config, {
  onPinFailed: (pid, detail) => process.stderr.write(`worker ${pid} not pinned: ${detail}\n`),
  onWorkerDeath: (pid, reason, detail) => process.stderr.write(`worker ${pid} died (${reason}): ${detail}\n`),
});
/** The seed program's spec; the clock it started with is carried in its fingerprint, as the server's claims carry it. */
const specAt = (clock: number): ProgramSpec => ({ code: SEED_PROGRAM, tools: SEED_PROGRAM_TOOLS, seed: 1, clock, limits: config.limits });

interface Item {
  readonly type?: string;
  readonly [key: string]: unknown;
}

const FINGERPRINT_PREFIX = 'ptcfp3.floor.';

function answer(output: readonly Item[]): object {
  return { id: `resp_${randomUUID()}`, object: 'response', status: 'completed', output };
}

/** A step's outcome as output items: the calls it paused on, or its program_output and the message carrying its text. */
function itemsOf(programCallId: string, event: ProgramEvent): Item[] {
  if (event.type === 'paused') {
    return event.calls.map((call) => ({
      type: 'function_call',
      id: `fc_${randomUUID()}`,
      call_id: `${programCallId}.${call.seq}`,
      name: call.tool,
      arguments: call.argumentsJson,
      caller: { type: 'program', caller_id: programCallId },
      status: 'completed',
    }));
  }
  const result = event.type === 'completed' ? event.result : '';
  return [
    { type: 'program_output', id: `po_${randomUUID()}`, call_id: programCallId, status: event.type, result },
    { type: 'message', id: `msg_${randomUUID()}`, role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: result, annotations: [] }] },
  ];
}

/** Request 1: the program starts and pauses on its calls. */
async function startSeed(): Promise<object> {
  const programCallId = `call_${randomUUID()}`;
  const clock = Date.now();
  const event = await engine.start(programCallId, specAt(clock));
  const program: Item = {
    type: 'program',
    id: `prog_${randomUUID()}`,
    call_id: programCallId,
    code: SEED_PROGRAM,
    fingerprint: `${FINGERPRINT_PREFIX}${clock}`,
    status: 'completed',
  };
  return answer([program, ...itemsOf(programCallId, event)]);
}

/** Request 2: the program's calls and their outputs, as resent, resume it. */
async function resumeSeed(program: Item, input: readonly Item[]): Promise<object> {
  const programCallId = String(program['call_id']);
  const clock = Number(String(program['fingerprint']).slice(FINGERPRINT_PREFIX.length));
  const outputs = new Map(input.filter((item) => item.type === 'function_call_output').map((item) => [item['call_id'], String(item['output'])]));
  const recorded: RecordedCall[] = input
    .filter((item) => item.type === 'function_call')
    .map((call) => ({ tool: String(call['name']), argumentsJson: String(call['arguments']), output: outputs.get(call['call_id']) ?? '' }));
  const { event } = await engine.resume(programCallId, specAt(clock), recorded);
  return answer(itemsOf(programCallId, event));
}

const app = Fastify({ logger: false });
app.get('/health', async () => ({ status: 'ok', workers: engine instanceof WorkerPool ? engine.pids : [] }));
app.post('/v1/responses', async (request) => {
  const input = ((request.body as { input?: unknown }).input ?? []) as Item[];
  const program = input.find((item) => item.type === 'program');
  return program === undefined ? startSeed() : resumeSeed(program, input);
});
await app.listen({ host: process.env['HOST'] ?? '127.0.0.1', port: Number(process.env['PORT'] ?? 0) });
process.once('SIGTERM', () => {
  void app
    .close()
    .then(() => engine.close())
    .finally(() => process.exit(0));
});

import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What the scripted backend answers one request with. */
export interface ScriptedReply {
  readonly status?: number;
  readonly headers?: Readonly<Record<string, string>>;
  /** JSON to send (a chat completion, an error envelope). */
  readonly json?: unknown;
  /** Raw text to send instead of JSON. */
  readonly text?: string;
  /** Hold the answer back (a backend slower than the emulator's timeout); the server's close ends it. */
  readonly hangs?: true;
}

/** A request the scripted backend received. */
export interface ReceivedChat {
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: {
    model: string;
    messages: { role: string; content: string | null; tool_calls?: { id: string; function: { name: string; arguments: string } }[]; tool_call_id?: string }[];
    tools?: { type: string; function: { name: string; description?: string; parameters?: unknown } }[];
  };
}

export interface ScriptedChat {
  /** The API base to give the emulator: `http://127.0.0.1:PORT/v1`. */
  readonly url: string;
  /** Every request, in order. */
  readonly received: ReceivedChat[];
  /** Replies not used yet. */
  remaining(): number;
  close(): Promise<void>;
}

export interface ChatUsage {
  readonly prompt_tokens: number;
  readonly completion_tokens: number;
}

const DEFAULT_USAGE: ChatUsage = { prompt_tokens: 100, completion_tokens: 20 };

/** A chat completion (the envelope every scripted answer shares) of one choice: `message`, ended by `finishReason`. */
function completion(message: Readonly<Record<string, unknown>>, finishReason: 'stop' | 'tool_calls', usage: ChatUsage = DEFAULT_USAGE): ScriptedReply {
  return {
    json: {
      id: 'chatcmpl-scripted',
      object: 'chat.completion',
      created: 0,
      model: 'scripted',
      choices: [{ index: 0, finish_reason: finishReason, message: { role: 'assistant', ...message } }],
      usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
    },
  };
}

/** A chat completion whose message is `content`. */
export function chatMessage(content: string, usage: ChatUsage = DEFAULT_USAGE): ScriptedReply {
  return completion({ content }, 'stop', usage);
}

/** A chat completion that calls functions. */
export function chatToolCalls(calls: readonly { name: string; arguments: string }[], usage: ChatUsage = DEFAULT_USAGE): ScriptedReply {
  return completion(
    { content: null, tool_calls: calls.map((call, index) => ({ id: `call_scripted_${index}`, type: 'function', function: call })) },
    'tool_calls',
    usage,
  );
}

/** An OpenAI error envelope with `status`. */
export function chatError(status: number, message: string, headers: Record<string, string> = {}): ScriptedReply {
  return { status, headers, json: { error: { message, type: status === 429 ? 'rate_limit_error' : 'server_error', code: null } } };
}

/**
 * An OpenAI-compatible chat server on loopback that answers `POST /v1/chat/completions` from a
 * script, one reply per request in order, and records what it received. A request past the
 * end of the script gets a 400 saying so (never retried), so a test that asks more fails.
 */
export async function startScriptedChat(script: readonly ScriptedReply[]): Promise<ScriptedChat> {
  const received: ReceivedChat[] = [];
  let next = 0;
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      let body: ReceivedChat['body'];
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        response.writeHead(400, { 'content-type': 'application/json' }).end('{"error":{"message":"not JSON"}}');
        return;
      }
      received.push({ path: request.url ?? '', headers: request.headers, body });
      const reply: ScriptedReply =
        request.method === 'POST' && request.url === '/v1/chat/completions'
          ? (script[next++] ?? chatError(400, `the script has no reply for request ${received.length}`))
          : chatError(404, `no route ${request.method} ${request.url}`);
      if (reply.hangs) return;
      const text = reply.text ?? JSON.stringify(reply.json ?? {});
      response.writeHead(reply.status ?? 200, { 'content-type': reply.text === undefined ? 'application/json' : 'text/plain', ...reply.headers }).end(text);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    received,
    remaining: () => Math.max(0, script.length - next),
    close: async () => {
      // A held answer's connection is ended too: nothing is left open after the test.
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

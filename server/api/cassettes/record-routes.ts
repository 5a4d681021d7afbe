import { Readable, Transform } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Tool } from '../../../schemas/tools.ts';
import { ApiError } from '../../platform/api-error.ts';
import { readToolSet, type ToolSummary } from '../../engine/conversation/tool-set.ts';
import type { JournalDetails } from '../../engine/journal-details.ts';
import { writeEntry } from '../../engine/stand-ins/cassettes/cassette-entry.ts';
import { ConversationMemory } from '../../engine/stand-ins/cassettes/conversation-memory.ts';
import { CassetteRecorder } from '../../engine/stand-ins/cassettes/recorder.ts';
import { Redactor } from '../../engine/stand-ins/cassettes/redaction.ts';

export interface RecordRouteOptions {
  readonly dir: string;
  /** The upstream Responses API, e.g. `https://api.openai.com/v1`. */
  readonly upstreamUrl: string;
  /** Sent upstream; when absent, the client's own Authorization is. Never written. */
  readonly upstreamApiKey: string | undefined;
  readonly redactPattern: string | undefined;
  readonly note: (request: FastifyRequest, details: JournalDetails) => void;
}

/** Headers that belong to one connection, or that fetch sets itself: never passed on. */
const HOP_BY_HOP = new Set([
  'host',
  'connection',
  'keep-alive',
  'transfer-encoding',
  'content-length',
  'content-encoding',
  'accept-encoding',
  'upgrade',
  'te',
  'trailer',
  'proxy-authorization',
  'proxy-connection',
]);

const TERMINAL = new Set(['completed', 'incomplete', 'failed', 'cancelled']);

interface RequestBody {
  readonly model?: unknown;
  readonly instructions?: unknown;
  readonly tools?: unknown;
  readonly input?: unknown;
  readonly previous_response_id?: unknown;
  readonly stream?: unknown;
}

interface ResponseLike {
  readonly id?: unknown;
  readonly status?: unknown;
  readonly output?: unknown;
}

/** A request's input as items: a string is one user message. */
function inputOf(body: RequestBody): unknown[] {
  if (typeof body.input === 'string') return [{ type: 'message', role: 'user', content: body.input }];
  return Array.isArray(body.input) ? body.input : [];
}

/** The final Response of a server-sent event stream (`response.completed` and its kin), if it has one. */
function streamedResponse(text: string): ResponseLike | undefined {
  let last: ResponseLike | undefined;
  for (const block of text.split(/\r?\n\r?\n/)) {
    const data = block
      .split(/\r?\n/)
      .filter((line) => line.startsWith('data:'))
      .map((line) => line.slice(5).trimStart())
      .join('\n');
    if (!data || data === '[DONE]') continue;
    try {
      const event = JSON.parse(data) as { type?: unknown; response?: ResponseLike };
      if (typeof event.type === 'string' && event.type.startsWith('response.') && event.response && TERMINAL.has(String(event.response.status)))
        last = event.response;
    } catch {
      // Not JSON: nothing to record from it; the client still gets it unchanged.
    }
  }
  return last;
}

/**
 * Record mode: `/v1/responses` and everything under it go to the upstream, and its answers come
 * back unchanged (a stream as it streams). Each finished Response is turned into cassette
 * entries; a background one when a poll (or its stream) shows it finished.
 */
export function registerRecordRoutes(app: FastifyInstance, options: RecordRouteOptions): void {
  const upstream = options.upstreamUrl.replace(/\/+$/, '');
  const memory = new ConversationMemory();
  const recorder = new CassetteRecorder();
  /** Background responses not finished yet: what is needed to record them when they are. */
  const pending = new Map<string, { body: RequestBody; before: readonly unknown[]; literals: readonly string[] }>();

  function upstreamHeaders(request: FastifyRequest): Record<string, string> {
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(request.headers)) {
      if (HOP_BY_HOP.has(name) || name === 'authorization' || value === undefined) continue;
      headers[name] = Array.isArray(value) ? value.join(', ') : value;
    }
    const authorization = options.upstreamApiKey === undefined ? request.headers.authorization : `Bearer ${options.upstreamApiKey}`;
    if (authorization) headers.authorization = authorization;
    return headers;
  }

  /** Secrets this request could carry into a payload: the key sent upstream and the client's token. */
  function secretsOf(request: FastifyRequest): string[] {
    const token = /^Bearer\s+(.+)$/i.exec(request.headers.authorization ?? '')?.[1];
    return [options.upstreamApiKey, token].filter((secret): secret is string => secret !== undefined);
  }

  function toolsOf(body: RequestBody, request: FastifyRequest): ToolSummary[] {
    try {
      return [...readToolSet(Array.isArray(body.tools) ? (body.tools as Tool[]) : []).summaries];
    } catch (error) {
      request.log.warn({ err: error }, "record: the request's tools could not be read; its entries are keyed without them");
      return [];
    }
  }

  function conversationBefore(body: RequestBody, request: FastifyRequest): readonly unknown[] | undefined {
    const previous = typeof body.previous_response_id === 'string' ? body.previous_response_id : undefined;
    const stored = previous === undefined ? [] : memory.through(previous);
    if (stored === undefined) {
      request.log.warn(
        { previous_response_id: previous },
        'record: previous_response_id names a response this recorder has not seen; the decision is not recorded',
      );
      return undefined;
    }
    return [...stored, ...inputOf(body)];
  }

  /** Writes the entries of a finished Response; remembers an unfinished background one. */
  function observe(request: FastifyRequest, body: RequestBody, before: readonly unknown[], response: ResponseLike, literals: readonly string[]): string[] {
    if (typeof response.id !== 'string') return [];
    const output = Array.isArray(response.output) ? response.output : [];
    if (!TERMINAL.has(String(response.status))) {
      pending.set(response.id, { body, before, literals });
      return [];
    }
    pending.delete(response.id);
    memory.remember(response.id, before, output);
    const redactor = new Redactor(options.redactPattern, literals);
    const entries = recorder.record(
      {
        model: String(body.model ?? ''),
        instructions: typeof body.instructions === 'string' ? body.instructions : null,
        tools: toolsOf(body, request),
        history: before,
        output,
      },
      redactor,
    );
    const files = entries.map((entry) => writeEntry(options.dir, entry));
    if (files.length > 0) request.log.info({ cassettes: files, response: response.id }, 'recorded');
    return files;
  }

  async function forward(request: FastifyRequest, url: string, body: string | undefined): Promise<Response> {
    try {
      return await fetch(url, { method: request.method, headers: upstreamHeaders(request), ...(body === undefined ? {} : { body }) });
    } catch (error) {
      throw new ApiError('upstream_unavailable', `Record mode: the upstream ${upstream} could not be reached (${(error as Error).message}).`);
    }
  }

  function passHeaders(reply: FastifyReply, answer: Response): void {
    reply.code(answer.status);
    answer.headers.forEach((value, name) => {
      if (!HOP_BY_HOP.has(name)) reply.header(name, value);
    });
  }

  /** Streams the upstream's answer to the client as it comes, and hands the whole text to `done` at its end. */
  function relay(reply: FastifyReply, answer: Response, done: (text: string) => void): FastifyReply {
    const chunks: Buffer[] = [];
    const tap = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        chunks.push(chunk);
        callback(null, chunk);
      },
      flush(callback) {
        try {
          done(Buffer.concat(chunks).toString('utf8'));
        } finally {
          callback();
        }
      },
    });
    Readable.fromWeb(answer.body as import('node:stream/web').ReadableStream).pipe(tap);
    return reply.send(tap);
  }

  app.post('/v1/responses', async (request, reply) => {
    const body = (request.body ?? {}) as RequestBody;
    const before = conversationBefore(body, request);
    const literals = secretsOf(request);
    const answer = await forward(request, `${upstream}/responses`, JSON.stringify(request.body));
    passHeaders(reply, answer);
    const streamed = (answer.headers.get('content-type') ?? '').includes('text/event-stream');
    if (streamed && answer.body) {
      return relay(reply, answer, (text) => {
        const response = streamedResponse(text);
        if (before && response) observe(request, body, before, response, literals);
      });
    }
    const text = await answer.text();
    if (answer.ok && before) {
      try {
        const files = observe(request, body, before, JSON.parse(text) as ResponseLike, literals);
        options.note(request, { cassette: { entries: files, divergences: [] } });
      } catch (error) {
        request.log.warn({ err: error }, "record: the upstream's answer could not be recorded");
      }
    }
    return reply.send(text);
  });

  // Polls, cancels, deletes and input item lists go upstream too; a poll that shows a
  // background response finished records it.
  app.all('/v1/responses/*', async (request, reply) => {
    const hasBody = request.method !== 'GET' && request.method !== 'HEAD' && request.method !== 'DELETE';
    const answer = await forward(
      request,
      `${upstream}${request.url.replace(/^\/v1/, '')}`,
      hasBody && request.body !== undefined ? JSON.stringify(request.body) : undefined,
    );
    passHeaders(reply, answer);
    const observeText = (text: string): void => {
      const response = (answer.headers.get('content-type') ?? '').includes('text/event-stream') ? streamedResponse(text) : (JSON.parse(text) as ResponseLike);
      const waiting = typeof response?.id === 'string' ? pending.get(response.id) : undefined;
      if (response && waiting) observe(request, waiting.body, waiting.before, response, waiting.literals);
    };
    if ((answer.headers.get('content-type') ?? '').includes('text/event-stream') && answer.body) return relay(reply, answer, (text) => observeText(text));
    const text = await answer.text();
    if (answer.ok && pending.size > 0) {
      try {
        observeText(text);
      } catch (error) {
        request.log.warn({ err: error }, 'record: a polled response could not be recorded');
      }
    }
    return reply.send(text);
  });
}

import type { FastifyInstance } from 'fastify';
import type { ConversationItem } from '../../schemas/items.ts';
import { CreateResponseRequest, InputItemsQuery } from '../../schemas/request.ts';
import type { DeletedResponse } from '../../schemas/response.ts';
import { ApiError } from '../api-error.ts';
import type { ClientChecks } from '../config.ts';
import { inputItems, storedHistory } from '../conversation/history.ts';
import { runTurn, type TurnServices } from '../conversation/turn.ts';
import { newId } from '../ids.ts';
import { parseOrThrow } from '../request-validation.ts';
import { buildResponse } from '../response-object.ts';
import type { ResponseStore } from '../stores/response-store.ts';

export interface ResponsesRouteDeps {
  readonly store: ResponseStore;
  readonly clientChecks: ClientChecks;
  readonly services: Omit<TurnServices, 'log'>;
}

const CLIENT_CHECKS_HEADER = 'x-ptc-client-checks';

function clientChecksFor(header: string | string[] | undefined, fallback: ClientChecks): ClientChecks {
  if (header === undefined) return fallback;
  if (header === 'strict' || header === 'lenient') return header;
  throw new ApiError('invalid_value', `Invalid value for header '${CLIENT_CHECKS_HEADER}': ${JSON.stringify(header)}. Supported values are: 'strict', 'lenient'.`, CLIENT_CHECKS_HEADER);
}

function flatHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string | undefined> {
  return Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, Array.isArray(value) ? value.join(', ') : value]));
}

/** Input items as the API lists them: messages with a status, and text content as content parts. */
function listedItem(item: ConversationItem): ConversationItem {
  if (item.type !== 'message') return item;
  const status = item.status ?? 'completed';
  if (typeof item.content !== 'string') return { ...item, status };
  const part = item.role === 'assistant' ? { type: 'output_text' as const, text: item.content, annotations: [] } : { type: 'input_text' as const, text: item.content };
  return { ...item, content: [part], status };
}

export function registerResponseRoutes(app: FastifyInstance, deps: ResponsesRouteDeps): void {
  const { store } = deps;

  async function storedOrNotFound(id: string) {
    const stored = await store.get(id);
    if (!stored) throw new ApiError('response_not_found', `Response with id '${id}' not found.`, 'response_id');
    return stored;
  }

  app.post('/v1/responses', async (request) => {
    const body = parseOrThrow(CreateResponseRequest, request.body);
    if (body.stream) throw new ApiError('unsupported_parameter', "stream: true is not supported yet by ptc-emulator; omit it or set it to false.", 'stream');
    if (body.background) throw new ApiError('unsupported_parameter', 'background: true is not supported yet by ptc-emulator; omit it or set it to false.', 'background');
    const createdAt = Math.floor(Date.now() / 1000);
    const newInput = inputItems(body.input);
    const stored = await storedHistory(store, body.previous_response_id);
    const output = await runTurn(
      {
        request: body,
        history: [...stored, ...newInput],
        inputStart: stored.length,
        clientChecks: clientChecksFor(request.headers[CLIENT_CHECKS_HEADER], deps.clientChecks),
        headers: flatHeaders(request.headers),
      },
      { ...deps.services, log: request.log },
    );
    const response = buildResponse(newId('resp'), body, output, createdAt);
    if (body.store !== false) await store.put({ response, inputItems: newInput });
    return response;
  });

  app.get<{ Params: { id: string } }>('/v1/responses/:id', async (request) => {
    return (await storedOrNotFound(request.params.id)).response;
  });

  app.delete<{ Params: { id: string } }>('/v1/responses/:id', async (request): Promise<DeletedResponse> => {
    const { id } = request.params;
    if (!(await store.delete(id))) throw new ApiError('response_not_found', `Response with id '${id}' not found.`, 'response_id');
    return { id, object: 'response.deleted', deleted: true };
  });

  app.get<{ Params: { id: string } }>('/v1/responses/:id/input_items', async (request) => {
    const query = parseOrThrow(InputItemsQuery, request.query);
    const stored = await storedOrNotFound(request.params.id);
    const ordered = query.order === 'asc' ? [...stored.inputItems] : [...stored.inputItems].reverse();
    let start = 0;
    if (query.after !== undefined) {
      const index = ordered.findIndex((item) => item.id === query.after);
      if (index < 0) throw new ApiError('invalid_value', `Invalid value for 'after': no input item '${query.after}' in response '${request.params.id}'.`, 'after');
      start = index + 1;
    }
    const data = ordered.slice(start, start + query.limit).map(listedItem);
    return {
      object: 'list',
      data,
      first_id: data[0]?.id ?? null,
      last_id: data.at(-1)?.id ?? null,
      has_more: start + query.limit < ordered.length,
    };
  });
}

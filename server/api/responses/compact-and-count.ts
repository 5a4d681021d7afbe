import type { FastifyInstance } from 'fastify';
import type { SealingKeys } from '../../../runtime/index.ts';
import type { ConversationItem } from '../../../schemas/items.ts';
import { CompactRequest, InputTokensRequest } from '../../../schemas/request.ts';
import type { CompactedResponse, EmittedCompaction, InputTokenCount } from '../../../schemas/response.ts';
import { expandHistory, runningProgramItems, sealCompaction } from '../../engine/conversation/compaction.ts';
import { historyOf, inputItems } from '../../engine/conversation/history.ts';
import { withReferencesResolved } from '../../engine/conversation/item-references.ts';
import { newId } from '../../platform/ids.ts';
import { listedItem } from '../http/listed-item.ts';
import { parseOrThrow } from '../../platform/request-validation.ts';
import type { ResponseStore } from '../../platform/stores/response-store.ts';
import { countUsage, ITEM_OVERHEAD_TOKENS, itemTokens } from '../../engine/usage.ts';
import { countUsageOffLoop, offLoopCounter } from '../../engine/usage-off-loop.ts';

export interface CompactAndCountDeps {
  readonly store: ResponseStore;
  readonly sealingKeys: SealingKeys;
  /** PTC_MAX_INPUT_ITEMS. */
  readonly maxInputItems: number;
  /** The most bytes of stored items a request's item references may bring in (PTC_BODY_LIMIT_BYTES). */
  readonly maxReferencedBytes: number;
}

/**
 * The two Responses endpoints that run no turn: `POST /v1/responses/input_tokens` counts what
 * a response would read, and `POST /v1/responses/compact` compacts a history. Both read the
 * history a response would continue (stored chain or conversation) and count as `usage` does.
 */
export function registerCompactAndCountRoutes(app: FastifyInstance, deps: CompactAndCountDeps): void {
  const { store, sealingKeys } = deps;

  /** The stored history and this request's input, each compaction item read as what it holds. */
  async function contextOf(body: {
    input?: InputTokensRequest['input'];
    conversation?: InputTokensRequest['conversation'];
    previous_response_id?: string | null;
  }) {
    const { stored, input } = expandHistory(
      await historyOf(store, body),
      await withReferencesResolved(store, inputItems(body.input ?? undefined), 'input', deps.maxReferencedBytes),
      sealingKeys,
      body.conversation ? 'conversation' : 'previous_response_id',
    );
    return [...stored, ...input];
  }

  // The body parser refuses an input past PTC_MAX_INPUT_ITEMS before it reaches the loop (schemas/body-bounds.ts).
  const bodyBounds = { inputItems: deps.maxInputItems };

  app.post('/v1/responses/input_tokens', { config: { bodyBounds } }, async (request): Promise<InputTokenCount> => {
    // The SDK sends no body for `count()` without arguments.
    const body = parseOrThrow(InputTokensRequest, request.body ?? {});
    const context = await contextOf(body);
    const usage = await countUsageOffLoop({ instructions: body.instructions ?? null, tools: body.tools ?? [], context, output: [] });
    return { object: 'response.input_tokens', input_tokens: usage.input_tokens };
  });

  app.post('/v1/responses/compact', { config: { bodyBounds } }, async (request): Promise<CompactedResponse> => {
    const body = parseOrThrow(CompactRequest, request.body ?? {});
    const context = await contextOf(body);
    const userMessages = context.filter((item) => item.type === 'message' && item.role === 'user').map(listedItem);
    const kept = runningProgramItems(context);
    const compaction: EmittedCompaction = { type: 'compaction', id: newId('cmp'), encrypted_content: sealCompaction(kept, sealingKeys[0]) };
    const usageInput = { instructions: body.instructions ?? null, tools: [], context, output: [] };
    // The compaction item costs what it holds: the running programs stay in the context.
    const compacted: readonly ConversationItem[] = [...userMessages, ...kept];
    const count = await offLoopCounter((counter) => {
      countUsage(usageInput, counter);
      for (const item of compacted) itemTokens(item, counter);
    });
    const { input_tokens: inputTokens } = countUsage(usageInput, count);
    const outputTokens = compacted.reduce((sum, item) => sum + itemTokens(item, count), ITEM_OVERHEAD_TOKENS);
    return {
      id: newId('resp'),
      object: 'response.compaction',
      created_at: Math.floor(Date.now() / 1000),
      output: [...userMessages, compaction],
      usage: {
        input_tokens: inputTokens,
        input_tokens_details: { cache_write_tokens: 0, cached_tokens: 0 },
        output_tokens: outputTokens,
        output_tokens_details: { reasoning_tokens: 0 },
        total_tokens: inputTokens + outputTokens,
      },
    };
  });
}

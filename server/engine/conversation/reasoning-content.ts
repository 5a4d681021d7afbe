import type { OutputItem } from '../../../schemas/items.ts';
import type { CreateResponseRequest } from '../../../schemas/request.ts';
import { sealToken } from '../../../runtime/index.ts';

/** The `include` value that asks for reasoning items' `encrypted_content` (what clients ask for with `store: false`). */
const ENCRYPTED_REASONING = 'reasoning.encrypted_content';
const VERSION = 'ptcrs1';

/**
 * The output with each reasoning item's `encrypted_content` when the request's `include` asks
 * for it, as the hosted service adds it: an opaque token a client sends back with the item in
 * a later `store: false` request. Here it seals the item's summary; nothing reads it back (the
 * stand-ins do not reason), so a client that resends it unchanged or not at all is served alike.
 */
export function withEncryptedReasoning(output: readonly OutputItem[], include: CreateResponseRequest['include'], key: Buffer): OutputItem[] {
  if (!include?.includes(ENCRYPTED_REASONING)) return [...output];
  return output.map((item) =>
    item.type === 'reasoning' ? { ...item, encrypted_content: sealToken(VERSION, JSON.stringify({ summary: item.summary }), key) } : item,
  );
}

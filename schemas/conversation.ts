import { z } from 'zod';
import { IncludeQuery, InputItemWithDefaultType, Metadata } from './request.ts';

/** Items one request may add to a conversation (`POST /v1/conversations` and `…/items`), as the SDK's doc comments say. */
export const MAX_ITEMS_PER_CONVERSATION_REQUEST = 20;

/** A conversation as the Conversations API returns it. */
export const ConversationObject = z.strictObject({
  id: z.string(),
  object: z.literal('conversation'),
  created_at: z.number().int(),
  metadata: z.record(z.string(), z.string()),
});
export type ConversationObject = z.infer<typeof ConversationObject>;

export const DeletedConversation = z.strictObject({
  id: z.string(),
  object: z.literal('conversation.deleted'),
  deleted: z.literal(true),
});
export type DeletedConversation = z.infer<typeof DeletedConversation>;

const NewItems = z.array(InputItemWithDefaultType).max(MAX_ITEMS_PER_CONVERSATION_REQUEST);

/** `POST /v1/conversations`. */
export const CreateConversationRequest = z.strictObject({
  items: NewItems.nullish(),
  metadata: Metadata.nullish(),
});

/** `POST /v1/conversations/{id}`. */
export const UpdateConversationRequest = z.strictObject({
  metadata: Metadata.nullable(),
});

/** `POST /v1/conversations/{id}/items`. */
export const CreateItemsRequest = z.strictObject({
  items: NewItems.min(1),
});

/** `GET /v1/conversations/{id}/items`. */
export const ListItemsQuery = z.strictObject({
  after: z.string().optional(),
  limit: z.coerce.number().int().min(1).max(100).default(20),
  order: z.enum(['asc', 'desc']).default('desc'),
  ...IncludeQuery,
});

/** The query of the item routes other than listing. */
export const ItemQuery = z.strictObject({ ...IncludeQuery });

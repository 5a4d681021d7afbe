import { z } from 'zod';
import type { SteerErrorCode } from './error-codes.ts';
import { type Caller, InputContentPart } from './items.ts';

/**
 * Steering over WebSocket (openai 7.60.0's `response.steer` client event and the
 * `response.steer.accepted` / `.pending` / `.failed` server events). test/types/sdk-wire-types.ts
 * checks the server events against the SDK's types.
 */

/**
 * A message of steering input. The SDK documents that steering takes only user messages of
 * `type`, `role` and `content` (text, image and file parts), and no tool outputs, although its
 * type of the input lists a `function_call_output` as well.
 */
export const SteerMessage = z.strictObject({
  type: z.literal('message').optional(),
  role: z.literal('user'),
  content: z.union([z.string(), z.array(InputContentPart).min(1)]),
});
export type SteerMessage = z.infer<typeof SteerMessage>;

/** A message of steering input as the emulator returns it, and as the request that commits it carries it. */
export interface SteeringMessage {
  readonly type: 'message';
  readonly role: 'user';
  readonly content: SteerMessage['content'];
}

/** `input` of `response.steer`: a string (one user message), or a non-empty array of messages. */
export const SteerInput = z.union([z.string().min(1), z.array(SteerMessage).min(1)]);
export type SteerInput = z.infer<typeof SteerInput>;

/** The event: only these three fields (`stream_id` is not sent: the target response gives the lane). */
export const SteerEvent = z.strictObject({
  type: z.literal('response.steer'),
  previous_response_id: z.string().min(1),
  input: SteerInput,
});
export type SteerEvent = z.infer<typeof SteerEvent>;

/**
 * A stub of an input a response waits on (ResponseSteerRequiredInput): the client fills in the
 * result and sends it in the continuation that commits the steering. `caller` is an extension
 * (the SDK's stubs have none): the call's own, when it has one, so that a stub filled with its
 * result is an output a paused program's client-loop checks accept (a program's call must be
 * answered with its `caller`).
 */
export type RequiredInput = (
  | { readonly type: 'function_call_output'; readonly call_id: string; readonly name: string }
  | { readonly type: 'custom_tool_call_output' | 'shell_call_output' | 'apply_patch_call_output'; readonly call_id: string }
  | { readonly type: 'mcp_approval_response'; readonly approval_request_id: string }
) & { readonly caller?: Caller };

/** A steering submission as the server events name it. */
export interface SteerReference {
  readonly id: string;
  readonly previous_response_id: string;
}

/**
 * Every steering event is numbered 0: it belongs to no response's stream (a response's events are
 * numbered from 0 by themselves, and a steering event may come between two of them).
 */
export interface SteerAcceptedEvent {
  readonly type: 'response.steer.accepted';
  readonly sequence_number: 0;
  readonly steer: SteerReference;
  readonly stream_id?: string;
}

export interface SteerPendingEvent {
  readonly type: 'response.steer.pending';
  readonly sequence_number: 0;
  readonly reason: 'waiting_for_required_input';
  readonly required_input: RequiredInput[];
  readonly steer: SteerReference;
  readonly stream_id?: string;
}

export interface SteerFailedEvent {
  readonly type: 'response.steer.failed';
  readonly sequence_number: 0;
  readonly error: { readonly type: 'invalid_request_error'; readonly code: SteerErrorCode; readonly message: string };
  /**
   * The input, uncommitted: as it was sent when it was not valid, else as it was read (each
   * message with its `type`); and the steering id once one was given.
   */
  readonly steer: { readonly input: string | SteeringMessage[]; readonly previous_response_id: string; readonly id?: string };
  readonly stream_id?: string;
}

export type SteerServerEvent = SteerAcceptedEvent | SteerPendingEvent | SteerFailedEvent;

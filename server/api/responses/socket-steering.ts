import type { SteerErrorCode } from '../../../schemas/error-codes.ts';
import { FIXED_LIMITS } from '../../../schemas/fixed-limits.ts';
import type { OutputItem } from '../../../schemas/items.ts';
import type { CreateResponseRequest } from '../../../schemas/request.ts';
import {
  SteerEvent,
  type RequiredInput,
  type SteerFailedEvent,
  type SteerInput,
  type SteeringMessage,
  type SteerServerEvent,
} from '../../../schemas/steering.ts';
import { requiredInputs } from '../../engine/conversation/required-inputs.ts';
import { newId } from '../../platform/ids.ts';
import { toApiError } from '../../platform/request-validation.ts';

// Steering over WebSocket (openai 7.x's `response.steer`), as one socket keeps it: which of its
// responses may be steered, the input queued on each, and what becomes of it once the response
// has sent its terminal event. The socket (responses-socket.ts) sends the events and runs the
// requests; nothing here runs a turn.
//
// A response's turn has run to its end before its first event is sent (docs/STREAMING.md), so
// a steer can only reach a response while its events are being sent, or after it has ended
// waiting on client calls:
//
//   streaming --steer--> accepted (the socket sends the rest of the events without the knobs' pauses)
//   streaming --terminal, nothing owed, input queued--> an automatic successor commits the input
//   streaming --terminal, calls owed--> waiting (response.steer.pending for each queued submission)
//   waiting --steer--> accepted, then pending at once
//   waiting --response.create naming it--> continuing: the queued input is prepended to its input;
//              made: continued (committed); refused: waiting again, the input still queued
//
// A response that ended owing nothing is `response_already_completed`; one whose continuation is
// being or has been made here is `response_not_active`.

/** Messages queued on one socket at most (with their bytes bounded by PTC_BODY_LIMIT_BYTES). */
export const MAX_STEERING_MESSAGES = FIXED_LIMITS.steeringMessages.value;

/** Responses of a socket whose steering state it keeps, the latest (besides those with input queued). */
export const REMEMBERED_RESPONSES = FIXED_LIMITS.steerableResponses.value;

interface Submission {
  readonly id: string;
  /** As read, for the events that return it. */
  readonly input: string | SteeringMessage[];
  readonly messages: readonly SteeringMessage[];
  readonly bytes: number;
  /** `response.steer.pending` was sent for it (at most once per submission). */
  pendingSent: boolean;
}

type TargetState = 'streaming' | 'waiting' | 'continuing' | 'continued' | 'completed';

interface Target {
  readonly id: string;
  readonly lane: string | undefined;
  /** Why steering it is not supported, if it is not. */
  readonly unsupported: string | undefined;
  readonly required: RequiredInput[];
  state: TargetState;
  /** While its events are sent: the request that made it, which an automatic successor inherits. */
  body: CreateResponseRequest | undefined;
  queued: Submission[];
}

/** A response to make on the socket, with no client request: it commits steering input. */
export interface Successor {
  readonly body: CreateResponseRequest;
  readonly lane: string | undefined;
  readonly parentId: string;
  readonly submissions: readonly Pick<Submission, 'id' | 'input'>[];
}

/** What a `response.steer` event comes to: the events to send now, and its refusal if refused. */
export interface SteerOutcome {
  readonly events: readonly SteerServerEvent[];
  readonly refusal?: { readonly code: SteerErrorCode; readonly message: string };
}

export class SocketSteering {
  readonly #targets = new Map<string, Target>();
  /** PTC_BODY_LIMIT_BYTES: the queued input of the socket, in JSON, at most (one request carries it). */
  readonly #maxBytes: number;

  constructor(maxBytes: number) {
    this.#maxBytes = maxBytes;
  }

  /** A response of this socket is about to send its events: from now it may be steered. */
  streaming(body: CreateResponseRequest, lane: string | undefined, response: { readonly id: string; readonly output: readonly OutputItem[] }): void {
    this.#targets.set(response.id, {
      id: response.id,
      lane,
      unsupported: unsupportedReason(body),
      required: requiredInputs(response.output),
      state: 'streaming',
      body,
      queued: [],
    });
    this.#forgetOldest();
  }

  /** A `response.steer` event, checked and queued on its target, or refused. */
  steer(raw: Record<string, unknown>): SteerOutcome {
    const previousId = typeof raw.previous_response_id === 'string' ? raw.previous_response_id : '';
    const parsed = SteerEvent.safeParse(raw);
    if (!parsed.success) {
      const reason = toApiError(parsed.error, raw).message;
      // Returned as it was sent, whatever it was (typed as valid input, which it may not be).
      return refused(
        (raw.input ?? null) as string,
        previousId,
        undefined,
        'invalid_input',
        `${reason} A response.steer event carries only type, previous_response_id and input: a non-empty string, or user messages of text, image and file parts.`,
      );
    }
    const event = parsed.data;
    const messages = steeringMessages(event.input);
    const input = typeof event.input === 'string' ? event.input : messages;
    const target = this.#targets.get(event.previous_response_id);
    if (!target) {
      return refused(
        input,
        previousId,
        undefined,
        'response_not_found',
        `Response '${event.previous_response_id}' is not available on this connection: only a response made on this socket (one of its latest ${REMEMBERED_RESPONSES}) can be steered.`,
      );
    }
    if (target.unsupported) return refused(input, previousId, target.lane, 'steering_not_supported', target.unsupported);
    if (target.state === 'completed') {
      return refused(
        input,
        previousId,
        target.lane,
        'response_already_completed',
        `Response '${target.id}' has completed and waits on no tool output: send the input with a new response.create that continues it (previous_response_id).`,
      );
    }
    if (target.state === 'continuing' || target.state === 'continued') {
      return refused(
        input,
        previousId,
        target.lane,
        'response_not_active',
        `Response '${target.id}' is no longer accepting steering input: a response.create continuing it has been ${target.state === 'continuing' ? 'received and is being answered' : 'answered'} on this socket.`,
      );
    }
    const bytes = Buffer.byteLength(JSON.stringify(messages));
    const queued = this.#queued();
    if (queued.messages + messages.length > MAX_STEERING_MESSAGES || queued.bytes + bytes > this.#maxBytes) {
      return refused(
        input,
        previousId,
        target.lane,
        'too_many_pending_steers',
        `This socket already holds ${queued.messages} messages (${queued.bytes} bytes of JSON) of steering input not yet committed; with these ${messages.length} it would hold more than ${MAX_STEERING_MESSAGES} messages (steeringMessages) or more than ${this.#maxBytes} bytes (PTC_BODY_LIMIT_BYTES). Send more once a response has committed them.`,
      );
    }
    const submission: Submission = { id: newId('steer'), input, messages, bytes, pendingSent: false };
    target.queued.push(submission);
    const events: SteerServerEvent[] = [
      withLane({ type: 'response.steer.accepted', sequence_number: 0, steer: { id: submission.id, previous_response_id: target.id } }, target.lane),
    ];
    // A response that already waits on the client's outputs says so at once.
    if (target.state === 'waiting') events.push(...this.#pending(target));
    return { events };
  }

  /**
   * A response has sent its terminal event: it now waits on the client's outputs, or has
   * completed. Its queued input is then announced pending, or handed to an automatic successor.
   */
  streamed(responseId: string): { readonly events: readonly SteerServerEvent[]; readonly successor?: Successor } {
    const target = this.#targets.get(responseId);
    if (target?.state !== 'streaming') return { events: [] };
    const body = target.body!;
    target.body = undefined;
    if (target.required.length > 0) {
      target.state = 'waiting';
      return { events: this.#pending(target) };
    }
    target.state = 'completed';
    if (target.queued.length === 0) return { events: [] };
    const submissions = target.queued;
    target.queued = [];
    // "Automatic successors inherit the previous response's settings and continue from it with
    // the queued input" (openai 7.x's ResponseSteerEvent).
    const { conversation: _conversation, ...settings } = body;
    return {
      events: [],
      successor: {
        body: { ...settings, previous_response_id: target.id, input: submissions.flatMap((submission) => submission.messages) },
        lane: target.lane,
        parentId: target.id,
        submissions: submissions.map(({ id, input }) => ({ id, input })),
      },
    };
  }

  /**
   * A `response.create` naming `previousResponseId` is about to be answered: the steering input
   * queued on it, to put before the request's own input. Until `continued`, the response takes no
   * more steering.
   */
  continuing(previousResponseId: string): readonly SteeringMessage[] {
    const target = this.#targets.get(previousResponseId);
    if (target?.state !== 'waiting') return [];
    target.state = 'continuing';
    return target.queued.flatMap((submission) => submission.messages);
  }

  /** The continuation named in `continuing` was made (its input committed), or refused (the input stays queued). */
  continued(previousResponseId: string, made: boolean): void {
    const target = this.#targets.get(previousResponseId);
    if (target?.state !== 'continuing') return;
    target.state = made ? 'continued' : 'waiting';
    if (made) target.queued = [];
  }

  /** The events that return a successor's input, when it could not be made. */
  successorFailed(successor: Successor, message: string): SteerServerEvent[] {
    return successor.submissions.map((submission) =>
      withLane(
        {
          type: 'response.steer.failed',
          sequence_number: 0,
          error: {
            type: 'invalid_request_error',
            code: 'successor_creation_failed',
            message: `The response that would commit this steering input was refused: ${message}`,
          },
          steer: { id: submission.id, input: submission.input, previous_response_id: successor.parentId },
        } satisfies SteerFailedEvent,
        successor.lane,
      ),
    );
  }

  /** `response.steer.pending` for each of the target's queued submissions not yet told. */
  #pending(target: Target): SteerServerEvent[] {
    return target.queued
      .filter((submission) => !submission.pendingSent)
      .map((submission) => {
        submission.pendingSent = true;
        return withLane(
          {
            type: 'response.steer.pending',
            sequence_number: 0,
            reason: 'waiting_for_required_input',
            required_input: target.required,
            steer: { id: submission.id, previous_response_id: target.id },
          },
          target.lane,
        );
      });
  }

  #queued(): { messages: number; bytes: number } {
    let messages = 0;
    let bytes = 0;
    for (const target of this.#targets.values()) {
      for (const submission of target.queued) {
        messages += submission.messages.length;
        bytes += submission.bytes;
      }
    }
    return { messages, bytes };
  }

  /** Keeps the latest REMEMBERED_RESPONSES, and every response that holds input or is being answered. */
  #forgetOldest(): void {
    let excess = this.#targets.size - REMEMBERED_RESPONSES;
    for (const [id, target] of this.#targets) {
      if (excess <= 0) return;
      if (target.queued.length > 0 || target.state === 'streaming' || target.state === 'continuing') continue;
      this.#targets.delete(id);
      excess -= 1;
    }
  }
}

/** Why a response cannot be steered, as the SDK documents it: made in a conversation, or with automatic compaction. */
function unsupportedReason(body: CreateResponseRequest): string | undefined {
  if (body.conversation) return 'Responses bound to a conversation do not support steering: send the input with a new response.create in the conversation.';
  if (body.context_management?.some((entry) => (entry as { type?: unknown }).type === 'compaction')) {
    return 'Responses using automatic compaction (context_management) do not support steering: send the input with a new response.create.';
  }
  return undefined;
}

/** The input as the user messages a request carries. */
function steeringMessages(input: SteerInput): SteeringMessage[] {
  if (typeof input === 'string') return [{ type: 'message', role: 'user', content: input }];
  return input.map((message) => ({ type: 'message', role: 'user', content: message.content }));
}

function withLane<Event extends SteerServerEvent>(event: Event, lane: string | undefined): Event {
  return lane === undefined ? event : { ...event, stream_id: lane };
}

function refused(input: string | SteeringMessage[], previousId: string, lane: string | undefined, code: SteerErrorCode, message: string): SteerOutcome {
  const event: SteerFailedEvent = {
    type: 'response.steer.failed',
    sequence_number: 0,
    error: { type: 'invalid_request_error', code, message },
    steer: { input, previous_response_id: previousId },
  };
  return { events: [withLane(event, lane)], refusal: { code, message } };
}

import { FIXED_LIMITS } from './fixed-limits.ts';

/**
 * Every error code the emulator can produce, declared once.
 *
 * `API_ERRORS` are HTTP errors: each has its status and the OpenAI `type` that the SDK maps to
 * an error class. `PROGRAM_ERRORS` are program failures: they are data, not HTTP errors, and
 * appear in `program_output.result` as `{"error": {"code", "message"}}` with status
 * `incomplete`. `docs/ERRORS.md` documents both tables; a test keeps it in sync.
 */

export type ApiErrorType = 'invalid_request_error' | 'authentication_error' | 'not_found_error' | 'conflict_error' | 'rate_limit_error' | 'server_error';

export interface ApiErrorDefinition {
  readonly status: number;
  readonly type: ApiErrorType;
  readonly description: string;
  /** A mistake in the client's loop (the journal lists these as client-loop violations). */
  readonly clientLoop?: true;
}

export const API_ERRORS = {
  invalid_json: {
    status: 400,
    type: 'invalid_request_error',
    description: 'The request body is not valid JSON (or not a JSON object).',
  },
  unsupported_media_type: {
    status: 415,
    type: 'invalid_request_error',
    description: 'The request body is not `application/json`, or its Content-Type names a charset other than UTF-8 (which JSON is, RFC 8259).',
  },
  request_too_large: {
    status: 413,
    type: 'invalid_request_error',
    description:
      'The request body exceeds `PTC_BODY_LIMIT_BYTES`; or the stored items its `item_reference` entries name come to more than that many bytes of JSON (`param`: `input`, or `items`).',
  },
  request_timeout: {
    status: 408,
    type: 'invalid_request_error',
    description: 'The client did not send the whole request (headers and body) within `PTC_REQUEST_TIMEOUT_MS`; the connection is closed after the answer.',
  },
  expectation_failed: {
    status: 417,
    type: 'invalid_request_error',
    description: 'The request names an `Expect` other than `100-continue`, the only one the server meets; the connection is closed after the answer.',
  },
  unknown_parameter: {
    status: 400,
    type: 'invalid_request_error',
    description: 'A parameter the Responses API does not define (top level of the request).',
  },
  missing_required_parameter: {
    status: 400,
    type: 'invalid_request_error',
    description:
      'A required field is absent; `param` names it. Also an `mcp_call` of a paused program resent without its `output` when no stored response holds it (`param`: that `output`).',
  },
  invalid_type: {
    status: 400,
    type: 'invalid_request_error',
    description: 'A field has the wrong JSON type; `param` names it.',
  },
  invalid_value: {
    status: 400,
    type: 'invalid_request_error',
    description: 'A field has a value outside what it accepts; `param` names it.',
  },
  previous_response_not_found: {
    status: 400,
    type: 'invalid_request_error',
    description: '`previous_response_id` names no stored response (never stored, deleted, or `store: false`).',
  },
  item_not_found: {
    status: 404,
    type: 'invalid_request_error',
    description:
      'An `item_reference` input item (or an input item that is only an `id`) names no output item of a stored response: made with `store: false`, deleted, or never emitted. The message is the hosted one; `param` names the item (`input[i]`, or `items[i]` on the Conversations API).',
  },
  duplicate_tool_name: {
    status: 400,
    type: 'invalid_request_error',
    description: 'Two tools in `tools` share a name.',
  },
  programmatic_tool_calling_not_enabled: {
    status: 400,
    type: 'invalid_request_error',
    description: 'A tool allows the `programmatic` caller but `tools` lacks `{type: "programmatic_tool_calling"}`.',
  },
  invalid_function_parameters: {
    status: 400,
    type: 'invalid_request_error',
    description:
      "A tool's strict `parameters` or `output_schema` is past one of the hosted API's limits for strict schemas (10 levels of nesting, 5,000 object properties, 1,000 enum values, 120,000 characters of names and values, 15,000 for a string enum of more than 250 values; and the emulator's 500 `patternProperties`), or is not a JSON Schema the validator (ajv) can compile; the message names the limit and where.",
  },
  too_many_input_items: {
    status: 400,
    type: 'invalid_request_error',
    description: '`input` carries more items than `PTC_MAX_INPUT_ITEMS`; a long conversation continues with `previous_response_id`.',
  },
  string_above_max_length: {
    status: 400,
    type: 'invalid_request_error',
    description: "A string of the body is longer than the hosted API's 10,485,760 characters; `param` names it (`input[0].content[0].text`).",
  },
  too_many_values: {
    status: 400,
    type: 'invalid_request_error',
    description: 'The body (or WebSocket message) holds more JSON values than `PTC_MAX_BODY_VALUES`; `param` names the member of the body that holds them.',
  },
  schema_too_large: {
    status: 400,
    type: 'invalid_request_error',
    description:
      "The schemas of a request's tools that programs check with (strict `parameters`, `output_schema`) come to more than `PTC_MAX_SCHEMA_BYTES`; `param` names the one that crossed it.",
  },
  schema_too_complex: {
    status: 400,
    type: 'invalid_request_error',
    description:
      "Ajv did not compile a request's schemas within `PTC_SCHEMA_COMPILE_TIMEOUT_MS` of CPU time, compiled one to more than 8 MiB of code, or ran out of the 1 GiB its thread may use (schemas within the limits of `invalid_function_parameters` but of thousands of keywords); `param` names the schema.",
  },
  tool_definitions_changed: {
    status: 400,
    type: 'invalid_request_error',
    clientLoop: true,
    description:
      "A request resuming a program defines one of the program's tools with other `parameters` or `output_schema` than the request that started it, or drops it.",
  },
  tool_output_missing: {
    status: 400,
    type: 'invalid_request_error',
    clientLoop: true,
    description: 'Client loop: a call in the conversation (`function_call`, `custom_tool_call`) has no output.',
  },
  tool_output_unknown_call: {
    status: 400,
    type: 'invalid_request_error',
    clientLoop: true,
    description:
      'Client loop: an output answers a `call_id` that no call in the conversation has, or a call of another type (a `function_call_output` for a `custom_tool_call`).',
  },
  tool_output_duplicate: {
    status: 400,
    type: 'invalid_request_error',
    clientLoop: true,
    description: 'Client loop: two outputs answer the same `call_id` (or two `program_output` items end one program).',
  },
  caller_missing: {
    status: 400,
    type: 'invalid_request_error',
    clientLoop: true,
    description:
      "Client loop: the output of a program's call does not copy the call's `caller`, or a call the emulator answered (`mcp_call`, `mcp_approval_request`, `code_interpreter_call`) comes back without its `caller`.",
  },
  caller_mismatch: {
    status: 400,
    type: 'invalid_request_error',
    clientLoop: true,
    description:
      "Client loop: the output's `caller` (or an `mcp_approval_response`'s, when it carries one) differs from the call's `caller`, or a call the emulator answered comes back with another program's `caller`, or `direct`.",
  },
  program_item_missing: {
    status: 400,
    type: 'invalid_request_error',
    clientLoop: true,
    description: 'Client loop: a call names a program whose `program` item is not in the conversation.',
  },
  program_item_altered: {
    status: 400,
    type: 'invalid_request_error',
    clientLoop: true,
    description:
      'Client loop: a resent program call is not one the program made at that position (its name, arguments or call_id changed, or it was reordered or forged), or a program item appears twice.',
  },
  fingerprint_invalid: {
    status: 400,
    type: 'invalid_request_error',
    clientLoop: true,
    description: 'A `program` fingerprint is malformed, truncated, forged, altered, of an unknown version, or sealed with a key this server does not accept.',
  },
  fingerprint_mismatch: {
    status: 400,
    type: 'invalid_request_error',
    clientLoop: true,
    description: "A `program` item's code or call_id no longer matches the fingerprint sealed with it.",
  },
  items_out_of_order: {
    status: 400,
    type: 'invalid_request_error',
    clientLoop: true,
    description: 'Client loop: an item comes before the item it depends on (an output before its call, a call before its program).',
  },
  program_busy: {
    status: 409,
    type: 'conflict_error',
    description: 'Another request is resuming the same program right now.',
  },
  response_not_found: {
    status: 404,
    type: 'not_found_error',
    description: 'No stored response has this id.',
  },
  conversation_not_found: {
    status: 404,
    type: 'not_found_error',
    description:
      'No conversation has this id (never created, or deleted): on the Conversations API, and for `conversation` on `POST /v1/responses` (`param`: `conversation`).',
  },
  conversation_item_not_found: {
    status: 404,
    type: 'not_found_error',
    description: 'The conversation holds no item with this id.',
  },
  conversation_locked: {
    status: 400,
    type: 'invalid_request_error',
    description: 'Another response is being made in this conversation right now (the hosted code and message); retry once it has finished.',
  },
  conversations_unsupported: {
    status: 400,
    type: 'invalid_request_error',
    description: 'The server was built with a store of its own that keeps no conversations (`ResponseStore.conversations`).',
  },
  agent_not_found: {
    status: 404,
    type: 'not_found_error',
    description: 'No agent has this id (Agents API; never created, or deleted).',
  },
  session_not_found: {
    status: 404,
    type: 'not_found_error',
    description: 'No agent session has this id (never created, or deleted).',
  },
  turn_not_found: {
    status: 404,
    type: 'not_found_error',
    description: 'The agent session has no turn with this id.',
  },
  session_resource_not_found: {
    status: 404,
    type: 'not_found_error',
    description: "A subagent, artifact or trace of an agent session asked for by id: the emulator's sessions have none (no subagents, no environment).",
  },
  automation_not_found: {
    status: 404,
    type: 'not_found_error',
    description: 'No automation has this id, or the automation has no invocation with this id (`param` says which).',
  },
  vault_not_found: {
    status: 404,
    type: 'not_found_error',
    description: 'No vault has this id, or the vault holds no credential with this id (`param` says which).',
  },
  invalid_request_error: {
    status: 400,
    type: 'invalid_request_error',
    description:
      "An `agent.session.input.tool_result` names a call the session does not wait on: the message is exactly `Unknown pending tool call: <call_id>`, which the SDK's `sessions.stream()` helper retries.",
  },
  active_turn_not_steerable: {
    status: 409,
    type: 'conflict_error',
    description: `A message into an agent session's active turn (which steers it) when the messages queued for the turn's next step, not yet read, would be more than ${FIXED_LIMITS.steeringMessages.value} (\`steeringMessages\` of the fixed limits) or more than \`PTC_BODY_LIMIT_BYTES\` of JSON; the turn takes more once its next step has read them (\`param\`: the event's \`input\`).`,
  },
  agents_not_emulated: {
    status: 400,
    type: 'invalid_request_error',
    description:
      'A part of the Agents API the emulator does not run (environments other than `none`, agent tools other than function and `programmatic_tool_calling`, subagents, approvals); the message names it ([DEVIATIONS.md](DEVIATIONS.md#the-agents-api)).',
  },
  agents_unsupported: {
    status: 400,
    type: 'invalid_request_error',
    description: 'The server was built with a store of its own that keeps no Agents API records (`ResponseStore.records`).',
  },
  webhook_endpoint_not_found: {
    status: 404,
    type: 'not_found_error',
    description: 'No webhook endpoint made through the API has this id (those of `PTC_WEBHOOK_URLS` are not managed through it).',
  },
  too_many_webhook_endpoints: {
    status: 400,
    type: 'invalid_request_error',
    description: "One more webhook endpoint than the store keeps (webhookEndpoints, the README's fixed limits); delete one first.",
  },
  webhook_test_failed: {
    status: 400,
    type: 'invalid_request_error',
    description:
      "`client.webhooks.test()` reached no answer from the endpoint (refused, timed out, not resolvable): the message says why. An endpoint's own status, 2xx or not, is the test's `status_code`.",
  },
  webhooks_unsupported: {
    status: 400,
    type: 'invalid_request_error',
    description:
      'Webhook endpoints made through the API need a store that keeps records; the server was built with a store of its own without them (`PTC_WEBHOOK_URLS` still works).',
  },
  duplicate_item_id: {
    status: 400,
    type: 'invalid_request_error',
    description:
      "Two items of one request share an id (an `item_reference` and the item it names count as two), with the hosted message; or an item sent to a conversation has an id the conversation already holds. `param` names the second item's `id`.",
  },
  mutually_exclusive_parameters: {
    status: 400,
    type: 'invalid_request_error',
    description: '`conversation` and `previous_response_id` in one request: a response continues one or the other.',
  },
  model_not_found: {
    status: 404,
    type: 'not_found_error',
    description: "The model is not in the emulator's model list (`GET /v1/models`).",
  },
  unknown_url: {
    status: 404,
    type: 'not_found_error',
    description: 'No route for this method and path.',
  },
  invalid_api_key: {
    status: 401,
    type: 'authentication_error',
    description: "`PTC_API_KEY` is set and the request's bearer token differs.",
  },
  simulated_error: {
    status: 500,
    type: 'server_error',
    description: "A fault injected by the `error_status` knob: its status is the knob's (500 is the default), its `type` follows the status.",
  },
  not_cancellable: {
    status: 400,
    type: 'invalid_request_error',
    description: 'Only responses created with `background: true` can be cancelled.',
  },
  server_busy: {
    status: 429,
    type: 'rate_limit_error',
    description:
      "Backpressure: `PTC_MAX_CONCURRENT_TURNS` turns are running and `PTC_MAX_QUEUED_TURNS` waiting, or `PTC_MAX_ARRIVING_BODY_BYTES` of request bodies are arriving, or a queue of work done beside the server's loop is full (large bodies to parse, long texts to count, schemas to compile or check, autopilot plans: the fixed limits `jsonBodyQueue`, `tokenCountQueue`, `schemaJobQueue`, `autopilotQueuedPlans`); `retry-after` (and for turns `retry-after-ms`) says when to retry.",
  },
  too_many_queued_messages: {
    status: 429,
    type: 'rate_limit_error',
    description: `A WebSocket on \`/v1/responses\`: more than ${FIXED_LIMITS.socketMessagesPastBound.value} messages came on it past the 16 requests (or \`PTC_BODY_LIMIT_BYTES\` of them) that may wait there (\`socketMessagesPastBound\` of the fixed limits); sent as an \`error\` event, and the socket is closed with 1008.`,
  },
  too_many_event_streams: {
    status: 429,
    type: 'rate_limit_error',
    description: `\`GET /v1/emulator/journal/events\`: as many journal event streams as the emulator serves at once are open (${FIXED_LIMITS.journalEventStreams.value}, \`journalEventStreams\` of the fixed limits); an agent session's \`GET …/events\` (or \`sessions.create\` with \`stream: true\`): ${FIXED_LIMITS.agentEventStreams.value} open on the server, or ${FIXED_LIMITS.agentEventStreamsPerSession.value} on that session (\`agentEventStreams\`, \`agentEventStreamsPerSession\`).`,
  },
  shutting_down: {
    status: 503,
    type: 'server_error',
    description:
      'The server is draining after SIGTERM: it finishes running requests and takes no new ones; a request waiting for a background response to finish (`stream: true`) that another instance runs stops waiting with it.',
  },
  store_unavailable: {
    status: 503,
    type: 'server_error',
    description:
      'The response store cannot be reached (`PTC_STORE=redis` with Redis down or not answering); `GET /health` says so too. Retry later: nothing was stored.',
  },
  model_backend_error: {
    status: 502,
    type: 'server_error',
    description:
      'The model backend (`PTC_MODEL_BACKEND`) could not be reached, answered an error (5xx after `PTC_MODEL_BACKEND_RETRIES` retries, or a 4xx such as a refused key), or answered something that is not a chat completion; the message gives its status and error.',
  },
  model_backend_timeout: {
    status: 504,
    type: 'server_error',
    description: 'The model backend did not answer within `PTC_MODEL_BACKEND_TIMEOUT_MS`.',
  },
  model_backend_rate_limited: {
    status: 429,
    type: 'rate_limit_error',
    description: 'The model backend answered 429 to every try (`PTC_MODEL_BACKEND_RETRIES` retries); `retry-after` is passed on when it sent one.',
  },
  cassette_miss: {
    status: 404,
    type: 'not_found_error',
    description:
      "Replay mode (`PTC_REPLAY`): no cassette entry matches the request's key (model, instructions, tools, messages so far, turn, phase); the message names the key and the nearest entries (docs/CASSETTES.md).",
  },
  cassette_divergence: {
    status: 409,
    type: 'conflict_error',
    description:
      'Replay mode with `PTC_REPLAY_STRICT=true`: a recorded program made other calls (or ended otherwise) in our runtime than in the recorded one; the message names the entry and the step (docs/CASSETTES.md).',
  },
  upstream_unavailable: {
    status: 502,
    type: 'server_error',
    description: 'Record mode (`PTC_RECORD`): the upstream Responses API (`PTC_UPSTREAM`) could not be reached.',
  },
  server_error: {
    status: 500,
    type: 'server_error',
    description: 'An unexpected failure inside the emulator; the log has the request id.',
  },
} as const satisfies Record<string, ApiErrorDefinition>;

export type ApiErrorCode = keyof typeof API_ERRORS;

export interface ProgramErrorDefinition {
  readonly description: string;
}

export const PROGRAM_ERRORS = {
  program_threw: { description: 'The program threw (or rejected) and did not catch it.' },
  syntax_error: { description: 'The code does not parse as an async function body (`import` declarations included).' },
  code_too_large: { description: 'The code exceeds `PTC_MAX_CODE_BYTES`.' },
  cpu_time_exceeded: {
    description: 'The program\'s code ran for more than `PTC_CPU_TIME_MS` of CPU time across all its steps (see "What each clock measures").',
  },
  wall_time_exceeded: {
    description:
      "One execution step's code ran for longer than `PTC_STEP_WALL_TIME_MS` (its own running time: waiting for a worker or for the client not counted); or its isolate could not stop it and its worker was stopped for it (a second past the limit, or at the step's hard deadline), or died while it ran past the limit.",
  },
  memory_limit_exceeded: {
    description:
      "The isolate's heap passed `PTC_MEMORY_MB`; or it did inside a native call that went on after isolated-vm disposed the isolate for it (an ICU call), and its worker was stopped for it 6 s after the isolate was disposed.",
  },
  call_limit_exceeded: { description: 'The program made more tool calls than `PTC_MAX_CALLS`.' },
  calls_in_flight_exceeded: { description: 'More than `PTC_MAX_CALLS_IN_FLIGHT` calls were pending at once.' },
  arguments_too_large: { description: "One call's serialised arguments exceed `PTC_MAX_ARGUMENT_BYTES`." },
  arguments_invalid: {
    description:
      "A call reached the host with arguments that break the tool's strict `parameters` (checked again in a context the program cannot reach), although the program's own context checks them first: the program tampered with the built-ins that check uses.",
  },
  tool_output_too_large: {
    description:
      'A tool output delivered to the program, or the error message of a call answered with an error, exceeds `PTC_MAX_TOOL_OUTPUT_BYTES`; a warm resume and a replay end at the same call.',
  },
  output_limit_exceeded: { description: 'The text and images emitted exceed `PTC_MAX_OUTPUT_BYTES`.' },
  program_stalled: { description: 'The program awaits a promise that nothing can settle: no tool call is pending.' },
  replay_diverged: {
    description:
      'Resuming by replay, the program made a different call (tool or canonical arguments) than the recorded run at the step named, or fewer calls: an earlier tool output changed, or the program is not deterministic.',
  },
  resume_limit_exceeded: { description: 'The program paused and was resumed more than `PTC_MAX_RESUMES` times.' },
  program_expired: { description: 'The program started more than `PTC_PROGRAM_EXPIRY_MS` ago: it can no longer be resumed.' },
  runtime_crashed: {
    description:
      "The worker process running the program died during its step (a crash, its memory ceiling, or no answer to heartbeats), and died again when the step was run once more by itself on a worker of its own: the program kills workers. A step that another program's crash took down is run again and goes on.",
  },
  runtime_error: { description: "The emulator failed to run the program (an internal fault, not the program's)." },
} as const satisfies Record<string, ProgramErrorDefinition>;

export type ProgramErrorCode = keyof typeof PROGRAM_ERRORS;

/** Whether `value` names a program error (an own key of PROGRAM_ERRORS, not one an object inherits). */
export function isProgramErrorCode(value: unknown): value is ProgramErrorCode {
  return typeof value === 'string' && Object.hasOwn(PROGRAM_ERRORS, value);
}

export interface SteerErrorDefinition {
  readonly description: string;
}

/**
 * The codes of `response.steer.failed` (openai 7.x's ResponseSteerErrorCode) the emulator sends
 * over WebSocket: a steering refusal is an event on the socket, never an HTTP error, and its
 * `error.type` is always `invalid_request_error` (server/api/responses/socket-steering.ts).
 */
export const STEER_ERRORS = {
  invalid_input: {
    description:
      'The `response.steer` event has a field besides `type`, `previous_response_id` and `input` (`stream_id` included: the target response gives the lane), or its `input` is not a non-empty string or a non-empty array of user messages (`type` `message` or none, `role` `user`, `content` a string or `input_text`, `input_image` and `input_file` parts); a tool output is refused too, as the SDK documents.',
  },
  response_not_found: {
    description: `The target is no response made on this socket, or one the socket no longer remembers (it keeps what it knows of its latest ${FIXED_LIMITS.steerableResponses.value} responses, \`steerableResponses\` of the fixed limits, and of every response with steering queued).`,
  },
  steering_not_supported: {
    description:
      'The target was made in a conversation (`conversation`) or with automatic compaction (`context_management`), which the SDK documents as not steerable.',
  },
  too_many_pending_steers: {
    description: `Accepting the input would queue more than ${FIXED_LIMITS.steeringMessages.value} messages (\`steeringMessages\` of the fixed limits) on the socket, not yet committed, or more than \`PTC_BODY_LIMIT_BYTES\` of JSON.`,
  },
  response_already_completed: {
    description:
      'The target has sent its terminal event and waits on no client call: steer a response while its events are being sent, or while it waits on tool outputs; otherwise send the input in a new `response.create`.',
  },
  response_not_active: {
    description: 'The target waited on client calls, and its continuation is being made, or has been made, on this socket.',
  },
  successor_creation_failed: {
    description:
      'The automatic successor of a steered response was refused (the message is the refusal: `server_busy`, `shutting_down`, a `store: false` response too large to hold, …); the event returns the input, uncommitted.',
  },
} as const satisfies Record<string, SteerErrorDefinition>;

export type SteerErrorCode = keyof typeof STEER_ERRORS;

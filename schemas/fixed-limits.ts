/**
 * The bounds the emulator holds to that are not settings, declared once: each module that
 * enforces one reads its value here, and the README's table of fixed limits is generated from
 * this table (`npm run docs:tables -- --write`; test/docs.test.ts fails when it differs). The
 * settings are in server/platform/config.ts, the program limits in runtime/limits.ts, the limits of
 * strict schemas in server/engine/conversation/strict-schema-limits.ts.
 */
export const FIXED_LIMITS = {
  agentEventStreams: {
    value: 256,
    description:
      'Agents API event streams (`GET /v1/agents/sessions/{id}/events`, `sessions.create` with `stream: true`) open on one server; one more is a 429 `too_many_event_streams`.',
  },
  agentEventStreamsPerSession: {
    value: 16,
    description: 'Agents API event streams open on one session on one server; one more is a 429 `too_many_event_streams`.',
  },
  agentEventLogEntries: {
    value: 128,
    description:
      'Appends (the events of one step of a session) Redis keeps of one session for the instances following it (`PTC_STORE=redis`; trimmed approximately, so a few more may stay): an instance that falls further behind ends its streams of that session rather than skip events.',
  },
  agentEventLogSeconds: {
    value: 600,
    description:
      "Seconds a session's events stay in Redis after its last one (`PTC_STORE=redis`): streams deliver from the moment they open, so only instances following the session read them.",
  },
  agentInputMessages: { value: 20, description: "Messages of one `agent.session.input.message` event, or of a session's `input`." },
  agentToolListBytes: {
    value: 3_145_728,
    description:
      "Bytes of compact UTF-8 JSON an agent's tool list may come to (the SDK's types document 3 MiB), on agents and on sessions' agents; more is a 400 `invalid_value` naming `tools`.",
  },
  agentEventsPerPost: { value: 64, description: 'Events of one `POST /v1/agents/sessions/{id}/events`.' },
  agentIdempotencyKeys: {
    value: 64,
    description: 'The latest `Idempotency-Key`s of event posts a session keeps: a post resent with one of them is answered 202 and applied no more.',
  },
  agentSilentRounds: {
    value: 4,
    description:
      'Responses in a row a turn may make without a message or a tool call before it fails (`internal_error`): a stand-in that only reasons never ends a turn.',
  },
  steeringMessages: {
    value: 32,
    description:
      "User messages of steering input queued at once and not yet read: those posted into an agent session's active turn, for its next step (one more is a 409 `active_turn_not_steerable`), and those `response.steer` queued on one WebSocket, not yet committed to a response (one more is `response.steer.failed` `too_many_pending_steers`). Their JSON comes to at most `PTC_BODY_LIMIT_BYTES` too, what the request that reads them may carry.",
  },
  steerableResponses: {
    value: 64,
    description:
      'Responses of one WebSocket whose steering state the socket keeps, the latest (and every one with steering input queued): a `response.steer` naming an older one is `response.steer.failed` `response_not_found`.',
  },
  eventStreamBufferBytes: {
    value: 1_048_576,
    description:
      "Bytes one event stream (the journal's, an agent session's) may have waiting in its socket's buffer, a client not reading: past it the connection is dropped rather than the buffer grown (the client reconnects).",
  },
  oversizedBodyDiscardBytes: {
    value: 67_108_864,
    description:
      'Bytes past `PTC_BODY_LIMIT_BYTES` the server reads of a body over it, dropping them, before it answers the 413 `request_too_large`: the client, done sending, reads the status, and its keep-alive connection serves its next request. A body that declares more (its `Content-Length`) is answered at once, one sent in chunks when it passes the bound, and the connection is closed after the answer: a client still sending may then see the connection reset (EPIPE, ECONNRESET) rather than the 413. A client that sent `Expect: 100-continue` is answered the 413 at once, with no `100 Continue` and so no body, and the connection closed.',
  },
  oversizedBodyDiscardMs: {
    value: 30_000,
    description:
      'Time the server spends reading (and dropping) the rest of a body over `PTC_BODY_LIMIT_BYTES` before its 413; past it the 413 is sent and the connection closed, as past `oversizedBodyDiscardBytes`.',
  },
  socketMessagesPastBound: {
    value: 256,
    description:
      'Messages a WebSocket on `/v1/responses` may bring while it is not read (16 requests, or `PTC_BODY_LIMIT_BYTES` of them, already wait there, or its client has not read its answers): those its last read brought. Past them the client is flooding the socket: an `error` event `too_many_queued_messages`, and the socket closed with 1008.',
  },
  journalEventStreams: {
    value: 64,
    description: 'Journal event streams (`GET /v1/emulator/journal/events`, the inspector) open at once; one more is a 429 `too_many_event_streams`.',
  },
  autopilotCalls: { value: 32, description: 'Tools one autopilot turn calls at most.' },
  autopilotArgumentChars: {
    value: 16_384,
    description: 'Characters of JSON the autopilot writes as the arguments of one call; a tool whose schema asks for more is left out.',
  },
  autopilotPlanMs: {
    value: 2_000,
    description:
      'Time one autopilot plan may take in its thread (a schema whose values are too costly to make); past it the turn answers with a message saying so.',
  },
  autopilotPlanThreads: { value: 2, description: "Threads the autopilot plans in, beside the server's loop." },
  autopilotQueuedPlans: { value: 64, description: 'Plans waiting for a thread; one more is a 429 `server_busy`.' },
  webhookEndpoints: {
    value: 100,
    description: 'Webhook endpoints made through the API (`client.webhooks.create`) the store keeps; one more is a 400 `too_many_webhook_endpoints`.',
  },
  webhookPendingDeliveries: {
    value: 1_024,
    description: 'Webhook deliveries one process has under way at once (posting, or waiting to retry); one more is dropped and journaled as dropped.',
  },
  webhookDeliveryTimeoutMs: { value: 10_000, description: "Time one webhook delivery attempt waits for the endpoint's status before it counts as failed." },
  webhookRetryCapMs: { value: 300_000, description: 'The longest wait between two attempts of one webhook delivery (the backoff doubles up to it).' },
  stringChars: {
    value: 10_485_760,
    description:
      'Characters of any one string in a request body or WebSocket message, as the hosted API (`string_above_max_length`, naming where: `input[0].content[0].text`); checked as soon as the body is parsed.',
  },
  jsonBodyQueue: {
    value: 32,
    description:
      "Large bodies and WebSocket messages (64 KiB or more) waiting to be parsed in the JSON thread, beside the server's loop; one more is a 429 `server_busy` with `retry-after`.",
  },
  schemaJobQueue: {
    value: 64,
    description:
      "Jobs waiting for the schema thread, beside the server's loop (compiling a request's tool schemas, checking a call's arguments against a strict schema); one more is a 429 `server_busy` with `retry-after`.",
  },
  tokenCountQueue: {
    value: 64,
    description:
      "Requests waiting to have their long texts (32 Ki characters or more) counted in the token thread, beside the server's loop, for their `usage`; one more is a 429 `server_busy` with `retry-after`.",
  },
  tokenCountMs: {
    value: 30_000,
    description: 'Time counting the tokens of one long text may take in the token thread (10 MiB of prose takes about a second); past it, a 429 `server_busy`.',
  },
  exploredConversations: { value: 10_000, description: 'Explored conversations the report of explore mode keeps (`GET /v1/emulator/explore`), the newest.' },
  logBatchBytes: {
    value: 8_192,
    description:
      'Bytes of log lines the server gathers before it writes them to stdout, in one write beside its loop; fewer are written `logFlushMs` after the first of them. A write each line took a tenth of the CPU of a busy server (README, "Logs in batches").',
  },
  logFlushMs: { value: 100, description: 'The longest a log line waits to be written to stdout while fewer than `logBatchBytes` of them are gathered.' },
  logBufferBytes: {
    value: 2_097_152,
    description:
      'Bytes of log lines the server holds while stdout is not read as fast as it logs (a pipe whose reader stopped): the lines past them are dropped and counted (`GET /metrics`, `ptc_log_lines_dropped_total`), never waited for. As the server closes, the lines held are written for up to a second, then dropped.',
  },
} as const satisfies Record<string, { readonly value: number; readonly description: string }>;

import type { FastifyInstance } from 'fastify';
import { ApiError } from '../../platform/api-error.ts';
import type { RespondDeps } from '../../engine/conversation/respond.ts';
import type { JournalRecorder } from '../journal/journal-hooks.ts';
import type { ResponseStore } from '../../platform/stores/response-store.ts';
import type { TurnGate } from '../../engine/turn-gate.ts';
import type { WebhookSender } from '../../platform/webhooks/webhook-sender.ts';
import { notEmulated } from './agent-definition.ts';
import { registerAgentRoutes } from './agent-routes.ts';
import { registerAutomationRoutes } from './automation-routes.ts';
import { AgentHarness } from './harness.ts';
import { SessionEventHub } from './session-events.ts';
import { sessionWebhooks } from './session-webhooks.ts';
import { registerSessionRoutes } from './session-routes.ts';
import { registerVaultRoutes } from './vault-routes.ts';

export interface AgentsApiDeps {
  readonly store: ResponseStore;
  readonly respond: RespondDeps;
  readonly gate: TurnGate;
  readonly recorder: JournalRecorder;
  /** Sends the sessions' status changes as webhooks. */
  readonly webhooks: WebhookSender;
  /** PTC_BODY_LIMIT_BYTES: what a step's request may carry, so what a turn's queued steering may come to. */
  readonly bodyLimitBytes: number;
}

/**
 * The Agents API (`client.beta.agents`, `/v1/agents…` and `/v1/vaults…`): a second front door
 * onto the Responses engine. Its harness, or undefined when the store keeps no records (every
 * route then answers 400 `agents_unsupported`).
 */
export function registerAgentsApi(app: FastifyInstance, deps: AgentsApiDeps): AgentHarness | undefined {
  const { records } = deps.store;
  if (!records) {
    const refuse = async (): Promise<never> => {
      throw new ApiError(
        'agents_unsupported',
        "This server's response store keeps no Agents API records (a store given to buildServer() without a `records` member).",
      );
    };
    for (const path of ['/v1/agents', '/v1/agents/*', '/v1/vaults', '/v1/vaults/*']) app.all(path, refuse);
    return undefined;
  }
  // With a store several instances share (Redis), events reach the streams of all of them through it.
  const hub = new SessionEventHub({ log: deps.store.sessionEvents, logger: app.log });
  hub.observe(sessionWebhooks(deps.webhooks));
  const harness = new AgentHarness({
    records,
    respond: deps.respond,
    gate: deps.gate,
    hub,
    journal: deps.recorder,
    log: app.log,
    maxSteeringBytes: deps.bodyLimitBytes,
  });
  registerAgentRoutes(app, () => records);
  registerSessionRoutes(app, { records: () => records, harness, hub, recordStream: deps.recorder.recordStream });
  registerVaultRoutes(app, records);
  // No sandbox runs here: environments (their files and templates too) are refused by name
  // rather than faked (docs/DEVIATIONS.md#the-agents-api).
  const refuseEnvironments = async (): Promise<never> => {
    throw notEmulated('environments (hosted or self-hosted sandboxes, their files and templates)', null);
  };
  for (const path of ['/v1/agents/environments', '/v1/agents/environments/*']) app.all(path, refuseEnvironments);
  registerAutomationRoutes(app, records, harness);
  // Event streams never end by themselves: closing the server ends them, or close() would wait.
  app.addHook('preClose', async () => hub.endAll());
  return harness;
}

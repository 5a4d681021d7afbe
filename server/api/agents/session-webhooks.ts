import type { SessionEvent } from '../../../schemas/agents.ts';
import { SESSION_REQUIRED_ACTION, type SentWebhookEventType } from '../../../schemas/webhooks.ts';
import type { WebhookSender } from '../../platform/webhooks/webhook-sender.ts';

/** The session status events that are also webhooks, and the webhook each one is. */
const WEBHOOK_OF: Partial<Record<SessionEvent['type'], SentWebhookEventType>> = {
  'agent.session.created': 'agent.session.created',
  'agent.session.in_progress': 'agent.session.in_progress',
  'agent.session.requires_action': 'agent.session.action_required',
  'agent.session.idle': 'agent.session.idle',
  'agent.session.failed': 'agent.session.failed',
};

/**
 * Sends a webhook for each change of a session's status its events tell of, with the data the
 * SDK's types give it: the session's id and its environment's type (`none`: the emulator runs
 * no environment), and for `action_required` the kind of action (a session waits only on
 * function calls here; the client reads the calls from the session).
 */
export function sessionWebhooks(sender: WebhookSender): (sessionId: string, events: readonly SessionEvent[]) => void {
  return (sessionId, events) => {
    for (const event of events) {
      const type = WEBHOOK_OF[event.type];
      if (type === undefined) continue;
      sender.send(type, {
        id: sessionId,
        ...(type === 'agent.session.action_required' ? { required_action: SESSION_REQUIRED_ACTION } : { environment_type: 'none' }),
      });
    }
  };
}

import { OpenAIProvider, Runner, tool } from '@openai/agents';
import { z } from 'zod';
import type { RunningServer } from './server.ts';

/** The Agents SDK's runner against a listening emulator, through its own openai client. */
export function runnerFor(server: RunningServer): Runner {
  return new Runner({ modelProvider: new OpenAIProvider({ apiKey: 'test-key', baseURL: server.baseURL, useResponses: true }), tracingDisabled: true });
}

/** A function tool only programs may call; the Agents SDK runs it. */
export const note = tool({
  name: 'note',
  description: 'Notes what it is given.',
  parameters: z.object({ echoed: z.string() }),
  allowedCallers: ['programmatic'],
  execute: async ({ echoed }) => `noted ${echoed}`,
});

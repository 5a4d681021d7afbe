import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import type { Tool } from '../schemas/tools.ts';
import { readToolSet } from '../server/engine/conversation/tool-set.ts';
import { PROGRAM_RULES } from '../server/engine/stand-ins/backend/chat-prompt.ts';
import { toolDeclarations } from '../server/engine/stand-ins/backend/tool-declarations.ts';
import { SEED_TOOLS } from './support/seed-loop.ts';

const doc = readFileSync(new URL('../docs/MODEL-BACKEND.md', import.meta.url), 'utf8');

/** The fenced block right after `<!-- marker -->` in docs/MODEL-BACKEND.md. */
function blockAfter(marker: string): string {
  const match = new RegExp(`<!-- ${marker} -->\\n\`\`\`\\w+\\n([\\s\\S]*?)\\n\`\`\`\\n`).exec(doc);
  if (!match) throw new Error(`docs/MODEL-BACKEND.md has no block after <!-- ${marker} -->`);
  return match[1]!;
}

it("docs/MODEL-BACKEND.md shows the declarations the code writes for the seed's tools", async () => {
  expect(blockAfter('seed-declarations')).toBe((await toolDeclarations(readToolSet(SEED_TOOLS as Tool[]).summaries)).text);
});

it('docs/MODEL-BACKEND.md shows the rules of programs as they are sent', () => {
  expect(blockAfter('program-rules')).toBe(PROGRAM_RULES);
});

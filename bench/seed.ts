import { fileURLToPath } from 'node:url';
import { Tool } from '../schemas/tools.ts';
import { readToolSet } from '../server/engine/conversation/tool-set.ts';
import { loadScenarioFile } from '../server/engine/stand-ins/scenario-model.ts';
import { SEED_TOOLS } from '../test/fixtures/seed-tools.ts';

/**
 * The seed scenario every case runs: the program comes from the same fixture the server and the
 * seed-loop test use, so the bench and the test can never drift apart on what "the seed" is.
 */
export const SEED_SCENARIO_PATH = fileURLToPath(new URL('../test/fixtures/seed-scenario.yaml', import.meta.url));

/** The user message that makes the scenario's rule fire (it matches on this substring). */
export const SEED_USER_MESSAGE = 'Compare inventory with demand for sku_123.';

export const SEED_PROGRAM: string = (() => {
  const program = loadScenarioFile(SEED_SCENARIO_PATH).rules[0]?.program;
  if (program === undefined) throw new Error(`${SEED_SCENARIO_PATH}: the first rule has no program`);
  return program;
})();

/**
 * The seed tools as the server hands them to the runtime (its own reading of a request's tools):
 * each with its strict `parameters` (checked in the program's context, then again in the
 * checker's) and its `output_schema`.
 */
export const SEED_PROGRAM_TOOLS = readToolSet(SEED_TOOLS.map((tool) => Tool.parse(tool))).programTools;

/** What `text()` must have produced once both tool outputs reach the program. */
export const SEED_EXPECTED_RESULT = '{"sku":"sku_123","available_units":42,"requested_units":31,"shortage_units":0}';

/**
 * The seed guide's client-side tool implementations. Every case answers calls with these, so
 * the tools themselves cost the same everywhere and the ratios show only runtime overhead.
 */
export const SEED_IMPLEMENTATIONS: Readonly<Record<string, (args: { sku: string }) => unknown>> = {
  get_inventory: ({ sku }) => ({ sku, available_units: 42 }),
  get_demand: ({ sku }) => ({ sku, requested_units: 31 }),
};

/** Fails the bench loudly if a case stopped doing the real work (a fast wrong answer is no result). */
export function assertSeedResult(caseName: string, result: string | undefined): void {
  if (result !== SEED_EXPECTED_RESULT) {
    throw new Error(`${caseName}: expected result ${SEED_EXPECTED_RESULT}, got ${JSON.stringify(result)}`);
  }
}

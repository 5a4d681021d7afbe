import { loadScenarioFile, ScenarioError, type ScenarioFile } from '../server/engine/stand-ins/scenario-model.ts';
import { UsageError } from './usage-error.ts';

export const VALIDATE_HELP = `Usage: ptc-emulator validate SCENARIOS.yaml

Checks a scenario file (YAML or JSON) as the server would load it: prints how many rules it
holds, or the first problem, naming the field. Exit code 0 when valid, 1 when not.
`;

/** `ptc-emulator validate FILE`: true when the file would load; its first problem on stderr when not. */
export function validate(args: readonly string[]): boolean {
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(VALIDATE_HELP);
    return true;
  }
  if (args.length !== 1) throw new UsageError('validate takes one scenario file: ptc-emulator validate SCENARIOS.yaml');
  let scenarios: ScenarioFile;
  try {
    scenarios = loadScenarioFile(args[0]!);
  } catch (error) {
    if (!(error instanceof ScenarioError)) throw error;
    process.stderr.write(`ptc-emulator: ${error.message}\n`);
    return false;
  }
  const hosted = scenarios.hosted ? ', and scripted hosted-tool outputs' : '';
  process.stdout.write(`${args[0]}: ${scenarios.rules.length} rule${scenarios.rules.length === 1 ? '' : 's'}${hosted}; valid\n`);
  return true;
}

/**
 * The `ptc-emulator` command (run by cli/main.ts once the Node.js version is known to do):
 * `serve`, `run`, `validate`, `eval`, `explore`. Every failure it can name (a wrong
 * flag, a bad setting, a port in use, a scenario file that does not load) is one line on
 * stderr and exit code 2, never a stack.
 */
import { ConfigError } from '../server/platform/config.ts';
import { ScenarioError } from '../server/engine/stand-ins/scenario-model.ts';
import { PACKAGE } from '../server/platform/package-info.ts';
import { MissingNodeFlagError } from '../runtime/index.ts';
import { UsageError, USAGE_EXIT_CODE } from './usage-error.ts';

const HELP = `ptc-emulator ${PACKAGE.version}: OpenAI's programmatic tool calling, self-hosted.

Usage:
  ptc-emulator serve [flags]                 serve the Responses API (serve --help lists every setting)
  ptc-emulator run PROGRAM.js [--tools tools.json] [--outputs answers.json] [--json]
                                             run one program in the sandbox and print what it did
  ptc-emulator validate SCENARIOS.yaml       check a scenario file
  ptc-emulator eval TASKS.yaml [--html FILE] compare direct tool calling with PTC on the file's tasks
  ptc-emulator explore [--seeds N] -- COMMAND [ARGS...]
                                             run COMMAND (your client loop) once per seed against every
                                             shape of response a PTC loop must survive, and report each
  ptc-emulator --version

Docs: README.md in the package, or https://www.npmjs.com/package/ptc-emulator
`;

async function main(argv: readonly string[]): Promise<number> {
  const [command, ...args] = argv;
  switch (command) {
    case 'serve': {
      const { serve } = await import('./serve.ts');
      await serve(args);
      return -1;
    }
    case 'run': {
      const { run } = await import('./run.ts');
      return run(args);
    }
    case 'eval': {
      const { evaluate } = await import('./eval.ts');
      return evaluate(args);
    }
    case 'explore': {
      const { explore } = await import('./explore.ts');
      return explore(args);
    }
    case 'validate': {
      const { validate } = await import('./validate.ts');
      return validate(args) ? 0 : 1;
    }
    case '--version':
    case '-v':
      process.stdout.write(`${PACKAGE.version}\n`);
      return 0;
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(HELP);
      return 0;
    default:
      throw new UsageError(`unknown command "${command}" (commands: serve, run, validate, eval, explore; see ptc-emulator --help)`);
  }
}

try {
  const code = await main(process.argv.slice(2));
  // serve keeps running; the others end with their code once their output is written.
  if (code >= 0) process.exitCode = code;
} catch (error) {
  if (error instanceof UsageError || error instanceof ConfigError || error instanceof ScenarioError || error instanceof MissingNodeFlagError) {
    process.stderr.write(`ptc-emulator: ${error.message}\n`);
    process.exitCode = USAGE_EXIT_CODE;
  } else {
    throw error;
  }
}
// eval ran the user's module, which may keep timers or sockets open: once its output is
// written, it ends however that module left the event loop.
if (process.argv[2] === 'eval' || process.argv[2] === 'explore') {
  await new Promise<void>((done) => process.stdout.write('', () => done()));
  await new Promise<void>((done) => process.stderr.write('', () => done()));
  process.exit();
}

import { settingFlag, settingRows, type SettingRow } from '../server/platform/config.ts';
import { UsageError } from './usage-error.ts';

/**
 * `serve`'s flags, one per setting of server/platform/config.ts (limits included): `--max-calls 50`
 * sets `PTC_MAX_CALLS`. A flag wins over the environment; what neither sets keeps its default.
 */
/** Shorter flags for some settings, beside their own: `--model-backend URL --model NAME`. */
const FLAG_ALIASES: Readonly<Record<string, string>> = { '--model': 'PTC_MODEL_BACKEND_MODEL' };

/** `command` names the command whose flags these are, in the error for an unknown one. */
export function settingsFromFlags(args: readonly string[], command = 'serve'): { env: Record<string, string>; fromFlag: Map<string, string> } {
  const rows = settingRows();
  const byFlag = new Map(rows.map((row) => [settingFlag(row.env), row]));
  for (const [alias, env] of Object.entries(FLAG_ALIASES)) byFlag.set(alias, rows.find((row) => row.env === env)!);
  const env: Record<string, string> = {};
  const fromFlag = new Map<string, string>();
  for (let index = 0; index < args.length; index++) {
    const arg = args[index]!;
    const equals = arg.indexOf('=');
    const flag = equals === -1 ? arg : arg.slice(0, equals);
    const row = byFlag.get(flag);
    if (!row) throw new UsageError(`unknown flag ${flag} for ${command} (see ptc-emulator ${command} --help)`);
    const value = equals === -1 ? args[++index] : arg.slice(equals + 1);
    if (value === undefined) throw new UsageError(`${flag} needs a value`);
    env[row.env] = value;
    fromFlag.set(row.env, flag);
  }
  return { env, fromFlag };
}

/** The help of `serve`, from the same rows as the README's configuration table. */
export function serveHelp(): string {
  const rows: SettingRow[] = settingRows();
  const lines = rows.map((row) => {
    const fallback = row.default === '' ? '' : ` (default ${row.default})`;
    return `  ${settingFlag(row.env)} <value>\n      ${row.env}${fallback}. ${row.description.replaceAll('`', '')}`;
  });
  return [
    'Usage: ptc-emulator serve [flags]',
    '',
    'Serves the OpenAI Responses API with programmatic tool calling on HOST:PORT until SIGINT or SIGTERM.',
    'Every setting is a flag and an environment variable; a flag wins.',
    '',
    ...lines,
    '',
  ].join('\n');
}

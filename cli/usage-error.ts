import { EmulatorError } from '../runtime/index.ts';
/** A command line the CLI cannot act on: printed as one line, exit code 2. */
export class UsageError extends EmulatorError {
  override readonly name = 'UsageError';
  readonly code = 'PTC_ERR_USAGE';
}

/** Exit code of a usage or configuration error (a wrong flag, a port in use, a bad file). */
export const USAGE_EXIT_CODE = 2;

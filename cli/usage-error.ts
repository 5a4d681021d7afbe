import { EmulatorError } from '../runtime/index.ts';
/** A command line the CLI cannot act on: printed as one line, exit code 2. */
export class UsageError extends EmulatorError {
  override readonly name = 'UsageError';
  readonly code = 'PTC_ERR_USAGE';
}

export { USAGE_EXIT_CODE } from './exit-codes.ts';

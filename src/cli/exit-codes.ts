/**
 * Exit statuses, one meaning each. `check` and `explain` report a verdict: 0 allowed, 1 denied, 2 no
 * verdict. Every other command: 0 done, 1 refused or failed, 2 a wrong command line or configuration.
 */
export const EXIT_OK = 0;
export const EXIT_ALLOWED = 0;
export const EXIT_DENIED = 1;
/** The command was understood but refused or failed: unknown site, duplicate key, database down. */
export const EXIT_FAILED = 1;
/** The command line or the configuration is wrong: nothing was attempted. */
export const EXIT_USAGE = 2;
/** Bad arguments, or no verdict: the service was unreachable or answered UNAVAILABLE, or the database was. */
export const EXIT_NO_VERDICT = 2;

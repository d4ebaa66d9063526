// `check` and `explain` report a verdict: 0 allowed, 1 denied, 2 no verdict (the RPC or the database failed).
// Every other command: 0 done, 1 refused or failed, 2 a wrong command line or configuration (nothing attempted).
export const EXIT_OK = 0;
export const EXIT_ALLOWED = 0;
export const EXIT_DENIED = 1;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;
export const EXIT_NO_VERDICT = 2;

/**
 * The longest text taken from a request into a log line or an event: values in a CheckRequest are
 * the client's (x-request-id, a client-IP header), of any length, and must not flood a log.
 */
export const MAX_LOGGED_CHARS = 256;

/** The text cut to MAX_LOGGED_CHARS; undefined stays undefined. */
export function clipForLog(text: string | undefined): string | undefined {
  return text !== undefined && text.length > MAX_LOGGED_CHARS ? text.slice(0, MAX_LOGGED_CHARS) : text;
}

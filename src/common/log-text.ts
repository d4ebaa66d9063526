/** A request's values (x-request-id, a client-IP header) are the client's, of any length: they must not flood a log. */
export const MAX_LOGGED_CHARS = 256;

export function clipForLog(text: string | undefined): string | undefined {
  return text !== undefined && text.length > MAX_LOGGED_CHARS ? text.slice(0, MAX_LOGGED_CHARS) : text;
}

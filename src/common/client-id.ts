/** The longest OAuth client id taken: a 107 quotes it back to the partner and the logs record it. */
export const CLIENT_ID_MAX_CHARS = 255;

// OAuth client ids are visible ASCII (RFC 6749 Appendix A.1); spaces would break one-line-per-client output.
const CLIENT_ID = new RegExp(`^[\\x21-\\x7e]{1,${CLIENT_ID_MAX_CHARS}}$`);

export function isClientId(text: string): boolean {
  return CLIENT_ID.test(text);
}

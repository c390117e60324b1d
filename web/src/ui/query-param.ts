/**
 * A parameter of the address as the e-mail or the SSO callback wrote it, read raw: the router's search parsing would
 * turn a token that happens to look like JSON (all digits, say) into a number.
 */
export const queryParam = (name: string): string | undefined =>
  new URLSearchParams(window.location.search).get(name) ?? undefined;

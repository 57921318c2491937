// The console session's cookie on a request (auth/secrets.ts makes and hashes its secret).

import { getCookie, type HTTPEvent } from 'h3';
import { isSessionSecret, SESSION_COOKIE } from './secrets.ts';

/** The request's session secret (its `kiln_session` cookie, read by h3), or null when absent or malformed. */
export function sessionSecret(event: HTTPEvent): string | null {
  const value = getCookie(event, SESSION_COOKIE);
  return isSessionSecret(value) ? value : null;
}

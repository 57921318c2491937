// The session cookie's hash of a request the server authorized as a console session: what the
// session routes act on. An API key has no session: 404.

import type { H3Event } from 'h3';
import type { Caller } from '../../../auth/access.ts';
import { hashKey } from '../../../auth/secrets.ts';
import { sessionSecret } from '../../../auth/session-cookie.ts';
import { ApiError } from '../../../errors.ts';

export function sessionHash(caller: Caller, event: H3Event): Buffer {
  const secret = caller.via === 'session' ? sessionSecret(event) : null;
  if (!secret) throw new ApiError('not_found', 'This request has no console session: it was made with an API key. Sessions come from the console\'s SSO sign-in.');
  return hashKey(secret);
}

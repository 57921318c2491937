// The scopes a key or session may carry: a leaf module, so that what only names them (the CLI's
// `kiln key create`) loads neither the request pipeline (auth/access.ts) nor the schemas.

/** The scopes a key or session may carry (keys/schemas.ts validates them, auth/me.ts reports them). */
export const KEY_SCOPES = ['read', 'write', 'keys', 'admin'] as const;
/** read, write; keys: manage the keys (and read the audit log) of the billing scope; admin: the operator's routes (admins only). */
export type Scope = (typeof KEY_SCOPES)[number];

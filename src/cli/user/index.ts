// The user commands: they call a Kiln service's API with an API key (KILN_URL, KILN_API_KEY)
// through the typed client, and exit with a code that says what went wrong (exit.ts).

import { UsageError } from '../args.ts';
import { batch, BATCH_HELP } from './batch.ts';
import { describe, exitCodeOf } from './exit.ts';
import { generate, GENERATE_HELP } from './generate.ts';
import { ls, LS_HELP, usage, USAGE_HELP } from './history.ts';
import { me, ME_HELP, models, MODELS_HELP, transform, TRANSFORM_HELP } from './info.ts';
import { endUser, END_USER_HELP } from './end-users.ts';
import { keys, KEYS_HELP } from './keys.ts';
import { listen, LISTEN_HELP } from './listen.ts';
import { run, RUN_HELP } from './run.ts';
import { workflow, WORKFLOW_HELP } from './workflow.ts';

export interface UserCommand {
  help: string;
  /** Reads its arguments with `parseArgs` (../args.ts), prints its own output; resolves with the exit code. */
  run(argv: string[]): Promise<number>;
}

export const userCommands: Record<string, UserCommand> = {
  generate: { help: GENERATE_HELP, run: generate },
  run: { help: RUN_HELP, run },
  batch: { help: BATCH_HELP, run: batch },
  workflow: { help: WORKFLOW_HELP, run: workflow },
  transform: { help: TRANSFORM_HELP, run: transform },
  models: { help: MODELS_HELP, run: models },
  me: { help: ME_HELP, run: me },
  listen: { help: LISTEN_HELP, run: listen },
  ls: { help: LS_HELP, run: ls },
  usage: { help: USAGE_HELP, run: usage },
  keys: { help: KEYS_HELP, run: keys },
  'end-user': { help: END_USER_HELP, run: endUser },
};

export async function runUserCommand(name: string, argv: string[]): Promise<number> {
  const command = userCommands[name]!;
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(`usage: kiln ${name} ${command.help}\n`);
    return 0;
  }
  try {
    return await command.run(argv);
  } catch (e) {
    if (e instanceof UsageError) process.stderr.write(`kiln ${name}: ${e.message}\n  usage: kiln ${name} ${command.help}\n`);
    else process.stderr.write(`kiln ${name}: ${describe(e)}\n`);
    return exitCodeOf(e);
  }
}

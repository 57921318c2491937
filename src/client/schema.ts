// Generated from the OpenAPI document by `npm run client:schema` (openapi-typescript). Do not edit:
// test/client.schema.test.ts fails when this file differs from what the served document renders.

export interface paths {
    "/models": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List the model catalog
         * @description The curated catalog with the marked-up prices billed to the caller. Cached for 5 minutes.
         */
        get: operations["listModels"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/usage": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Read plan tier, budget and usage
         * @description Intended as a pre-flight check before generating.
         */
        get: operations["getUsage"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/usage/daily": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Read usage per day and model
         * @description The billing scope of `GET /usage` (the personal budget, or the Team pool of a workspace-bound key) per UTC day and model. A charge counts on the UTC day it was made: at its reserved amount while its generation is in flight, at its actual cost once settled, not at all once released. By default the current period, whose days add up exactly to `used_micros` (`workspace_used_micros`). With `groupBy=endUser` or `groupBy=metadata.<key>`, the body also has `groups`: per day and group (the end user, or the key's value; null for the charges without it), by day then spend descending, in keyset pages (`limit`, `cursor`, `next_cursor`); the groups of a day add up exactly to that day's `days` rows.
         */
        get: operations["getDailyUsage"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/end-users": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List end users by spend
         * @description The end users (the `endUser` of requests that spent) of the key's billing scope — the personal budget, or the Team pool of a workspace-bound key — with their spend and charges over `from`..`to` (UTC days; default the current calendar month), by `usedMicros` descending then `endUser`. Pages follow `nextCursor` (keyset). A whole calendar month reads a monthly roll-up in spend order; another range sums its days.
         */
        get: operations["listEndUsers"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/generations": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List generations
         * @description The key's account's generations created through the API, in the key's billing scope (the personal budget for a key without a workspace, the workspace for a workspace-bound key; other members' jobs are not listed), newest first. Each item is exactly the `GET /generations/{id}` body. Pages follow `nextCursor` (keyset: no gaps or repeats while new jobs arrive). Generations made over MCP, by the application or as workflow outputs are not listed. `endUser` and `metadata[key]=value` (several pairs: all must match) filter by attribution, combined with the other filters.
         */
        get: operations["listGenerations"];
        put?: never;
        /**
         * Start an image or code generation
         * @description Only enqueues: replies 202 with a pending id at once; poll `GET /generations/{id}` for the result. The worst-case cost is reserved from the key's budget (personal or Team pool) and settled at the actual cost when the job completes; a failed job costs nothing. With `Prefer: wait=N` (1–60), waits up to N seconds: a job completed or failed by then is answered 200 with its status (as `GET /generations/{id}`), otherwise the usual 202. With an `Idempotency-Key`, a retry of an accepted request (same key, same body, any key of the account) answers the same id with `idempotent-replayed: true` and starts nothing; concurrent duplicates start one job.
         */
        post: operations["createGeneration"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/generations/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Poll a generation
         * @description Never cached. 404 when the id does not exist, belongs to another account, or was not created through the API. With `Prefer: wait=N` (1–60), answers as soon as the generation is completed or failed, or after N seconds with its state then.
         */
        get: operations["getGeneration"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/generations/{id}/events": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Stream a generation's status changes and its output as it is written
         * @description Server-sent events (`text/event-stream`). Each status the generation reaches is one `status` event whose `data` is the `GET /generations/{id}` body, with `id` 1 (pending), 2 (processing) or 3 (completed or failed); the terminal event is the last, then the stream closes. While it processes, `delta` (output text as the provider writes it), `preview` (partial images), `progress` (the provider's status) and `reset` (the execution starts over: drop what was shown) events follow (docs: API guide, "Streaming"). Reconnect with `Last-Event-ID` to resume right after any event, with no gap and no repeat. A comment line every 15 s keeps the connection open. At most `KILN_MAX_STREAMS` (default 100) streams per account are open on one server; beyond, 429 `rate_limited`. 404 and 400 as `GET /generations/{id}`.
         */
        get: operations["streamGenerationEvents"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/generations/{id}/cancel": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Cancel a generation
         * @description A pending or processing generation ends `failed` with error `canceled`; its reservation is released (no charge) and a running provider call is aborted within seconds, whichever worker runs it. No request body. 409 `conflict` when the generation has already completed or failed; 404 as for `GET /generations/{id}`. Counts against the key's read rate limit, like a poll.
         */
        post: operations["cancelGeneration"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/images/transforms": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Convert, compress or trim a stored image
         * @description Synchronous and free (never billed). The source must be the caller's (a path or a URL of this store) or a shared image under `seed/`. `compress` searches encoder quality for the largest output within `targetBytes`; when unreachable, the smallest encode is stored and `withinTarget` is false. A trim that finds no uniform edges returns `trimmed: false`, every other field null, and stores nothing. While the image store is unavailable the answer is 503 `server_error` with `Retry-After`.
         */
        post: operations["transformImage"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/batches": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List batches
         * @description The account's batches, newest first. Pages follow `nextCursor`.
         */
        get: operations["listBatches"];
        put?: never;
        /**
         * Start a batch of generations
         * @description A JSON Lines body (`Content-Type: application/jsonl` or `application/x-ndjson`), up to 50000 lines and 100 MB: each line `{ "custom_id", "method": "POST", "url": "/api/v1/generations", "body": <a POST /generations body> }` (OpenAI's batch input format). Validation is all or nothing: any problem is a 400 `invalid_request` whose `error.details` lists every problem as a JSON pointer into the lines (`/lines/17/body/model`, lines counted from 1), and nothing is created. A valid batch answers 202 with the batch. Each line becomes a generation (`batchId` on it; `GET /generations?batchId=` lists them) that reserves its worst case only when it starts, in a lane behind interactive work and taking turns with other accounts' batches. `Idempotency-Key` is honoured as on `POST /generations`.
         */
        post: operations["createBatch"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/batches/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get a batch
         * @description The batch with its `requestCounts`. 404 for an unknown batch or another account's.
         */
        get: operations["getBatch"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/batches/{id}/cancel": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Cancel a batch
         * @description The batch goes `canceling`: every line not yet started ends `canceled` (nothing charged), and lines in flight are canceled as `POST /generations/{id}/cancel` would (reservation released, provider call aborted); once all have ended it is `canceled`. Canceling a batch already canceling answers it again; 409 `conflict` once it has ended.
         */
        post: operations["cancelBatch"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/batches/{id}/results": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Download a batch's results
         * @description JSON Lines (`application/jsonl`), one line per batch line that has ended, in line order: `{ "custom_id", "generationId", "response": { "status_code": 200, "body": <GET /generations/{id} body> } }` for completed lines, `{ "custom_id", "generationId", "error": { "code", "message" } }` for the rest. Available while the batch runs (what has ended so far), complete once it has ended. Streamed: the server reads it page by page as it writes.
         */
        get: operations["getBatchResults"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/batches/{id}/events": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Stream a batch's progress
         * @description Server-sent events (`text/event-stream`): `progress` (`data` = the batch, with its `requestCounts`) when the stream opens and as lines end, and last, once the batch has ended, `status` with the batch; then the stream closes. Event ids count the lines ended (the last one's is total + 1): reconnect with `Last-Event-ID` to resume without repeats. At most `KILN_MAX_STREAMS` streams per account on one server.
         */
        get: operations["streamBatchEvents"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/workflows": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List saved workflows
         * @description The workflows of the key's billing scope (its workspace for a workspace-bound key, else its account), most recently updated first; deleted ones are left out. The graph is not returned: `GET /workflows/{id}`.
         */
        get: operations["listWorkflows"];
        put?: never;
        /**
         * Save a new workflow
         * @description The workflow belongs to the key's billing scope: the workspace of a workspace-bound key, else the account. The graph is checked as `kiln workflow import` checks it — unique ids, edges between existing nodes, no cycles, models that exist and fit their output type, image URLs the owner can read, at most 200 nodes, 1,000 edges and 256 KB — and every problem is listed in `error.details` (`{ path, message }`, `path` a JSON pointer into this body, e.g. `/graph/nodes/3/model`). Answers 201 with the workflow (version 1), its `Location` and `ETag`. With an `Idempotency-Key`, a retry (same key, same body, any key of the account in the same scope) answers the same workflow with `idempotent-replayed: true` and creates nothing. Counted on the key's read rate limit.
         */
        post: operations["createWorkflow"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/workflows/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get a workflow with its graph
         * @description The graph includes the outputs written back by completed runs (`result` on output nodes). `version` and the `ETag` change with every save, not when a run writes its results back: an `If-Match` taken from here stays valid while only runs complete. Never cached (`no-store`). 404 when it does not exist, was deleted, or belongs to another account or workspace.
         */
        get: operations["getWorkflow"];
        /**
         * Replace a workflow's name and graph
         * @description Checked as on create (400 with `error.details`). With `If-Match`, saves only over that version: if the workflow was saved since, 412 `precondition_failed` and nothing is written (read it again, reapply, save). Without it the last write wins. Results written back by runs are kept on output nodes whose `result` the body leaves out (`"result": null` removes one). Runs already started keep their snapshot. Counted on the key's read rate limit.
         */
        put: operations["replaceWorkflow"];
        post?: never;
        /**
         * Delete a workflow
         * @description It leaves `GET /workflows`, and `GET /workflows/{id}`, runs and retries of it answer 404. Runs already started finish, and they stay readable by id (`GET /workflows/{id}/runs/{runId}`, their events and graph, `GET /workflows/{id}/runs`). With `If-Match`, only when that is still the version (412 otherwise).
         */
        delete: operations["deleteWorkflow"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/workflows/{id}/runs": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List a workflow's runs
         * @description The runs of one of the caller's workflows, newest first, without their results (read one with `GET /workflows/{id}/runs/{runId}`). 404 when the workflow does not exist or belongs to another account.
         */
        get: operations["listWorkflowRuns"];
        put?: never;
        /**
         * Run a saved workflow server-side
         * @description Takes an immutable snapshot of the graph (later edits change neither what runs nor what is charged), then runs every prompt node in dependency order, independent ones in parallel (bounded by the plan's parallel slots), feeding each output into the prompts it connects to. Each output is one generation on the caller's budget. Outputs not started within the run window (about 5 minutes) fail the run. The body is optional: none (or `{}`) starts the run unattributed; `endUser` and `metadata` attribute it (docs: Attribution), and every output inherits them. Only a workflow of the key's billing scope that is not deleted runs (404 otherwise). With an `Idempotency-Key`, a retry (same key, same workflow, same body, any key of the account) answers the same run id with `idempotent-replayed: true` and starts nothing; concurrent duplicates start one run.
         */
        post: operations["runWorkflow"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/workflows/{id}/runs/{runId}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Poll a workflow run
         * @description Never cached. `results` gain an entry as each output settles (image outputs carry a signed `url`; code, screen and design outputs carry `code`). 404 when the run does not exist, belongs to another account, or is not a run of that workflow. With `Prefer: wait=N` (1–60), answers as soon as the run is completed or failed, or after N seconds with its state then.
         */
        get: operations["getWorkflowRun"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/workflows/{id}/runs/{runId}/events": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Stream a workflow run's progress
         * @description Server-sent events (`text/event-stream`): `status` when the run is pending or running (`data` = the `GET /workflows/{id}/runs/{runId}` body); for each output as it settles, in `results` order, `output` (`data` = its entry of `results`) then `progress` (`data` = `{ "total", "completed" }`); while outputs run, their `delta`, `preview`, `output.progress` and `reset` events (`data` adds `promptNodeId` and `outputNodeId`; docs: API guide, "Streaming"); last, once the run is completed or failed and no output can still settle, `status` with the full run body — then the stream closes. Every event has an `id`; reconnect with `Last-Event-ID` to resume with no gap and no repeat. A comment line every 15 s keeps the connection open. At most `KILN_MAX_STREAMS` (default 100) streams per account are open on one server; beyond, 429 `rate_limited`. 404 and 400 as `GET /workflows/{id}/runs/{runId}`.
         */
        get: operations["streamWorkflowRunEvents"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/workflows/{id}/runs/{runId}/graph": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * A run's graph
         * @description The nodes and edges of the run's snapshot — ids, kinds, labels, output types, models and platforms; prompt and text values are not returned. The snapshot never changes, so neither does this answer. Each `results` entry of the run names its `promptNodeId` and `outputNodeId` in it. 404 when the run does not exist, belongs to another account, or is not a run of that workflow.
         */
        get: operations["getWorkflowRunGraph"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/workflows/{id}/runs/{runId}/cancel": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Cancel a workflow run
         * @description The run ends `failed` with error `canceled`: outputs not started are abandoned, outputs in flight are aborted and their reservations released (they appear in `results` as `failed` with error `canceled`); only completed outputs are charged, and their results stay. No request body. 409 `conflict` when the run has already completed or failed; 404 as for `GET /workflows/{id}/runs/{runId}`. Counts against the key's read rate limit, like a poll.
         */
        post: operations["cancelWorkflowRun"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/workflows/{id}/runs/{runId}/retry": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Retry a failed workflow run
         * @description Starts a new run on the failed run's snapshot (not the workflow as saved now), billed to this key: completed outputs are reused — their results copied, never run or charged again (`costMicros` 0) — and only the failed and abandoned outputs and what depends on them run. Outputs of the failed run still in flight are canceled first, so none runs twice. The new run's `retryOf` names the failed run. No request body. 409 `conflict` when the run is not `failed` or was already retried (retry the newer run instead).
         */
        post: operations["retryWorkflowRun"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/webhooks": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List webhook endpoints
         * @description Every endpoint of the key's billing scope, oldest first. Secrets are never listed.
         */
        get: operations["listWebhooks"];
        put?: never;
        /**
         * Create a webhook endpoint
         * @description The endpoint belongs to the billing scope of the key: the workspace for a workspace-bound key, else the account; it receives the events of jobs and runs billed to that scope. `url` must be https, with a host that resolves only to public addresses and no credentials (400 `invalid_request` otherwise). `events` defaults to every type. The answer carries `secret` (Standard Webhooks, `whsec_…`): store it, it is not shown again.
         */
        post: operations["createWebhook"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/webhooks/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get a webhook endpoint
         * @description 404 when it does not exist or belongs to another scope.
         */
        get: operations["getWebhook"];
        put?: never;
        post?: never;
        /**
         * Delete a webhook endpoint
         * @description Pending deliveries are not attempted any more. 404 when it does not exist or belongs to another scope. A workspace's endpoint: only the member who made it or a workspace owner or admin (else 403 `forbidden`, nothing changes).
         */
        delete: operations["deleteWebhook"];
        options?: never;
        head?: never;
        /**
         * Update a webhook endpoint
         * @description Fields left out stay as they are; `events: null` means every type. A new `url` is checked as on create. `enabled: true` enables an endpoint the service disabled (after a 410 or 5 days of failures); deliveries that failed meanwhile can be sent again with `POST /webhooks/{id}/recover`. A workspace's endpoint: only the member who made it or a workspace owner or admin (else 403 `forbidden`, nothing changes).
         */
        patch: operations["updateWebhook"];
        trace?: never;
    };
    "/webhooks/{id}/rotate-secret": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Rotate a webhook endpoint's signing secret
         * @description Answers the new secret (shown only here). For the next 24 h every delivery carries two signatures in `webhook-signature`, space-separated: one under the new secret and one under the old, so a receiver can switch at any time within the overlap. No request body. A workspace's endpoint: only the member who made it or a workspace owner or admin (else 403 `forbidden`, nothing changes).
         */
        post: operations["rotateWebhookSecret"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/webhooks/{id}/deliveries": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List an endpoint's deliveries
         * @description Newest first. Each delivery is one event's message to this endpoint (`id` is its `webhook-id` header, what the receiver got and what redeliver takes; `webhookId` repeats it; `deliveryId` is the delivery's own uuid) with its status, attempts and the last attempt's status code and error class. Response bodies of the receiver are never stored or shown. The log reaches back as far as the service keeps events (`KILN_EVENT_RETENTION`, 30 days unless its operator set it); a delivery still pending is kept until it ends.
         */
        get: operations["listWebhookDeliveries"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/webhooks/{id}/deliveries/{deliveryId}/redeliver": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Redeliver a message
         * @description Sends the delivery's message again — the same `webhook-id` and the same body (signed with the current secret, with a new `webhook-timestamp`) — as a new round on the retry schedule, whatever its status. `deliveryId` is the message's `webhook-id` as the receiver got it (`msg_…`, the delivery's `id` in the log), or the delivery's uuid (`deliveryId` in the log). 404 when this endpoint has no such delivery or belongs to another scope. No request body.
         */
        post: operations["redeliverWebhook"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/webhooks/{id}/recover": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Send failed messages again
         * @description Every delivery of the endpoint that failed at or after `since` is sent again (same `webhook-id`, same body), as a new round on the retry schedule.
         */
        post: operations["recoverWebhook"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/webhooks/{id}/test": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Send a test event
         * @description Queues a `webhook.test` event (`data` = `{ "endpointId" }`) for this endpoint only, signed and retried like any other. 409 `conflict` when the endpoint is disabled. No request body.
         */
        post: operations["testWebhook"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/events": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Stream every event of the key's scope
         * @description Server-sent events (`text/event-stream`) of the key's billing scope (the workspace of a workspace-bound key, else the account): `generation.completed`, `generation.failed`, `workflow_run.completed`, `workflow_run.failed`, `budget.threshold`, `webhook.test`, `workflow.saved`, `workflow.deleted`, `batch.completed`, `batch.canceled`, `batch.expired` (every type a webhook can receive), each with `event` = its type, `data` = the message a webhook receives (`{ "type", "timestamp", "data" }`, the same bytes) and an `id`. Without `Last-Event-ID` the stream starts now; with one, it resumes after that event with no gap and no repeat, over the last 24 h. Events are sent in commit order, once the transactions that wrote them have ended. A comment line every 15 s keeps the connection open. At most `KILN_MAX_STREAMS` (default 100) streams per account are open on one server; beyond, 429 `rate_limited`.
         */
        get: operations["streamEvents"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/keys": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List API keys
         * @description The keys of the caller's billing scope, newest first, revoked and expired ones included. Personal: the caller's own personal keys. A workspace: all keys billed to it for its owners and admins, a member's own otherwise. Needs the `keys` scope (a console session has it). Keys with scopes the caller lacks are listed too (nothing in an entry is secret), though only a caller holding every scope of a key may read it alone, rotate or revoke it. `liveSecrets` and `graceEndsAt` say how many of a key's secrets work now and until when the older one does.
         */
        get: operations["listKeys"];
        put?: never;
        /**
         * Create an API key
         * @description The key bills the caller's scope (a workspace only for its owners and admins). Its `scopes` can never exceed the caller's own (403 `insufficient_scope`). `budgetMicros` caps what it may spend per billing period, below the pool's: past it, 429 `insufficient_quota`. The answer is the key's list entry plus `key`, the secret: store it, it is not shown again.
         */
        post: operations["createKey"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/keys/{id}/rotate": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Rotate an API key
         * @description Answers a new secret under the same id (its scopes, limits, budget and history stay). The previous secret keeps working for `graceSeconds` (0 to 7 days; default a day), so clients can switch without downtime; then it gets the same 401 as an unknown key. The body is optional: none, or `{}`, means the default grace. Any older secret (still in the grace of an earlier rotation) ends at once: at most two secrets work, the new one and the one it replaced. 403 `forbidden` when the key has a scope the caller lacks (nothing changes); 404 when the key is not the caller's scope's; 409 when it is revoked or expired.
         */
        post: operations["rotateKey"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/keys/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get an API key
         * @description One key, as `GET /keys` lists it, with `liveSecrets` and `graceEndsAt` to follow a rotation. Like rotating and revoking, it needs the caller to hold every scope of the key: a stronger key is 403 `forbidden`. 404 when it is not the caller's scope's.
         */
        get: operations["getKey"];
        put?: never;
        post?: never;
        /**
         * Revoke an API key
         * @description Every secret of the key (a rotation's previous one too) gets 401 from the next request on. Idempotent: answers the key with `revokedAt`. 403 `forbidden` when the key has a scope the caller lacks (nothing changes); 404 when it is not the caller's scope's.
         */
        delete: operations["revokeKey"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/audit": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Read the audit log
         * @description Who changed what in the caller's billing scope: keys created, rotated, revoked and expired; webhooks; workflows saved and deleted; sign-ins; tier, budget and membership changes. Newest first, in pages (`cursor` = the previous page's `nextCursor`). Needs the `keys` scope.
         */
        get: operations["listAudit"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/end-users/{endUser}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get an end user's budget and use
         * @description The cap set with `PUT /end-users/{endUser}` and what the end user used this period (settled plus held) and has left. An end user without a cap answers the same shape with `budgetMicros: null` and its use this calendar month (UTC): never 404. The billing scope is the caller's (a workspace-bound key reads the workspace's end users); another scope's end user of the same id is another end user.
         */
        get: operations["getEndUserBudget"];
        /**
         * Set an end user's budget
         * @description Caps what requests naming this `endUser` may reserve per period, in the caller's billing scope, on top of the account's (or workspace's) and the key's own budgets: the tightest wins. Over it, a request gets 429 `insufficient_quota` naming the end user; with `rpm`, its quick requests past the limit get 429 `rate_limited` with `Retry-After`. A new cap (or a new period) counts what the end user already spent in the period. Every change is an audit entry (`end_user.budget_set`). Needs the `keys` scope.
         */
        put: operations["setEndUserBudget"];
        post?: never;
        /**
         * Remove an end user's budget
         * @description Its requests are then bound only by the account's (or workspace's) and the key's budgets; reservations held on the cap still end on it. An audit entry (`end_user.budget_removed`). 404 when the end user has no cap in the caller's billing scope. Needs the `keys` scope.
         */
        delete: operations["removeEndUserBudget"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/me": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Who am I
         * @description The account behind the request's credential — an API key, or the console session's cookie — with its email, the scopes the credential carries now, the workspace it acts in and bills (null = personal), and whether the user is an admin. Needs the `read` scope (`write` implies it): a key made with only `keys` or `admin` gets 403. A missing, unknown, revoked or expired credential gets the same 401 as on every route.
         */
        get: operations["getMe"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/session": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The current console session
         * @description Who the console session of this request's cookie is, the workspace it acts in, the workspaces it may switch to, and when it ends. Only a console session (the `kiln_session` cookie from the SSO sign-in at `/auth/login`) has one: a request with an API key gets 404, one with neither (or an ended session) 401.
         */
        get: operations["getSession"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/session/workspace": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        /**
         * Switch the session's workspace
         * @description From the next request on, the session acts in (and bills) this Team workspace of its user, or personally with `null`. 404 when the user is not a current member of it, or when the request was made with an API key (a key's workspace is fixed when it is created). As for every unsafe request authenticated by the session cookie, the `Origin` must be the public URL's (else 403 `forbidden`).
         */
        put: operations["switchSessionWorkspace"];
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/admin/accounts": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List accounts by spend
         * @description Every account, most spent this period first (held + settled, as GET /usage counts it; then by id), in pages (`cursor` = the previous page's `nextCursor`). `q` keeps the accounts whose email contains it (case-insensitive, 3 to 100 characters). A page costs what it returns, not the size of the ledger.
         */
        get: operations["adminListAccounts"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/admin/accounts/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get an account
         * @description The account's tier, budget, spend this period and when it resets, its API keys (revoked ones too; never a secret or hash) and its workspaces.
         */
        get: operations["adminGetAccount"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        /**
         * Set an account's tier or budget
         * @description Fields left out stay as they are; `budgetMicros: null` means unlimited. `tier: blocked` stops the account's new generations. Written to the account's audit log as `account.updated` (each change from → to), naming the admin's key or session.
         */
        patch: operations["adminUpdateAccount"];
        trace?: never;
    };
    "/admin/accounts/{id}/revoke-keys": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Revoke all of an account's keys
         * @description Every secret of every live API key of the account (a rotation's previous one too) gets 401 from the next request on. One `key.revoked` audit entry per key, naming the admin. Console sessions are not keys and stay. Idempotent: a second call revokes 0.
         */
        post: operations["adminRevokeAccountKeys"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/admin/workspaces": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List workspaces
         * @description Every workspace with its owner, Team plan, spend this period and current member count, in pages by id. `q` keeps those whose name contains it.
         */
        get: operations["adminListWorkspaces"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/admin/workspaces/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get a workspace
         * @description The workspace, its plan and spend, and its members (owner, admins, members; former members with `leftAt`).
         */
        get: operations["adminGetWorkspace"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/admin/models": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List the whole catalog
         * @description Every catalog entry in catalog order, disabled ones included, with what its upstream charges (`cost`), the markup and what callers are billed (`pricing`).
         */
        get: operations["adminListModels"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/admin/models/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        /**
         * Enable or disable a model
         * @description A disabled entry is refused by new generations at once (400; workflow runs already started keep their snapshot) and leaves GET /models; this process lists the change immediately, other API processes within five minutes. Audited as `model.enabled` / `model.disabled`.
         */
        patch: operations["adminUpdateModel"];
        trace?: never;
    };
    "/admin/health": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Service health
         * @description Each network catalog entry's upstream (healthy, failing, skipped for its fallback, on trial), the job queue (ready, running, scheduled, how long the oldest ready job has waited) and the webhook backlog.
         */
        get: operations["adminHealth"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/openapi.json": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The OpenAPI 3.1 document
         * @description This document, generated from the same schemas that validate requests. Public (no key) and cacheable for 5 minutes; it carries a strong `ETag`: revalidate with `If-None-Match` (304 while unchanged). `If-Match` naming another version is refused with 412.
         */
        get: operations["getOpenApi"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        /** @description Every error response uses this envelope. */
        Error: {
            error: {
                /**
                 * @description Stable machine-readable error type.
                 * @enum {string}
                 */
                type: "invalid_request" | "unauthorized" | "insufficient_scope" | "forbidden" | "rate_limited" | "insufficient_quota" | "payment_required" | "not_found" | "gone" | "conflict" | "precondition_failed" | "idempotency_conflict" | "server_error";
                /** @description Human-readable message. */
                message: string;
                /** @description Every problem of a request body checked as a whole (workflow saves), in the order found; `message` names the first ones. */
                details?: {
                    /** @description JSON pointer (RFC 6901) into the request body, e.g. `/graph/nodes/3/model`; `""` is the body itself. */
                    path: string;
                    /** @description What is wrong there, naming the node or edge. */
                    message: string;
                }[];
            };
        };
        EndUser: {
            /** @description The `endUser` the app sent with its requests. */
            endUser: string;
            /** @description Spend over the range: settled charges at their cost plus reservations in flight at their reserved amount (as `used_micros` counts them). */
            usedMicros: number;
            /** @description Charges counted over the range (one per billable output): settled ones and reservations in flight. */
            generations: number;
        };
        /** @description Optional. Your own tags: at most 16 pairs; keys match `^[A-Za-z0-9_.:-]{1,64}$`, values are strings of at most 512 characters. Stored with the generation and its charge, returned in its bodies and events, never changed; `GET /generations?metadata[key]=value` filters by them. */
        Metadata: {
            [key: string]: string;
        };
        GenerationRequest: {
            /**
             * @description Must be compatible with the model's category.
             * @enum {string}
             */
            type: "image" | "code";
            /** @description 1 to 50,000 characters. */
            prompt: string;
            /** @description A model id from `GET /models`. Defaults to the default image model for `image` and the default code model for `code`. */
            model?: string;
            images?: components["schemas"]["ImageInput"][];
            textInputs?: components["schemas"]["TextInput"][];
            /**
             * @description For images. Default `1:1`.
             * @enum {string}
             */
            aspectRatio?: "1:1" | "16:9" | "9:16" | "4:3" | "3:4" | "3:2" | "2:3";
            /**
             * @description For code. Default `text` (`svg` for SVG models). `glsl` produces a Shadertoy-style fragment shader with 3–5 annotated uniforms.
             * @enum {string}
             */
            targetLanguage?: "text" | "tsx" | "jsx" | "css" | "svg" | "json" | "typescript" | "javascript" | "mdx" | "markdown" | "glsl";
            /** @description For code. Render a full HTML screen. Default false. */
            screenHtml?: boolean;
            /** @description Optional. An opaque id of your own user this request is for: 1 to 128 printable characters (no control characters). Stored with the generation and its charge, returned in its bodies and events, never changed; `GET /generations?endUser=` filters by it. Required when the API key was made with `requireEndUser`. */
            endUser?: string;
            metadata?: components["schemas"]["Metadata"];
        };
        ImageInput: {
            /** @description An `https://` URL or a `data:` URI. */
            url: string;
            /** @description MIME type. Default `image/png`. */
            mediaType?: string;
        };
        TextInput: {
            /** @description At most 50,000 characters. */
            content: string;
            /** @description Defaults to `Input N`. */
            label?: string;
            /** @description Language hint for code inputs. */
            language?: string;
        };
        GenerationAccepted: {
            /**
             * Format: uuid
             * @description Job id.
             */
            id: string;
            /**
             * @description Always `pending`.
             * @constant
             */
            status: "pending";
        };
        ImageResult: {
            /** @constant */
            type: "image";
            /** @description Signed, expiring URL of the generated image; null once the image expired (see `expiredAt`). */
            url: string | null;
            /** @description MIME type. */
            mediaType: string | null;
            aspectRatio: string;
            /** @description Billed cost in microdollars. */
            costMicros: number;
            /** @description The catalog entry that produced the output and was billed: the requested model, or one of its fallbacks when its upstream was down. Absent on outputs made before fallbacks existed. */
            model?: string;
            /** @description When the image was removed under the service's retention period (KILN_RETENTION); the record, status and cost stay. Absent while the image is kept. */
            expiredAt?: string;
        };
        CodeResult: {
            /** @constant */
            type: "code";
            /** @description Generated text. */
            code: string | null;
            /** @description The parsed value when the output is JSON; for `glsl`, `{ uniforms: [...] }` parsed from the annotations; null otherwise. */
            structuredOutput: unknown;
            /** @description Billed cost in microdollars. */
            costMicros: number;
            /** @description The catalog entry that produced the output and was billed: the requested model, or one of its fallbacks when its upstream was down. Absent on outputs made before fallbacks existed. */
            model?: string;
        };
        GenerationStatus: {
            /** Format: uuid */
            id: string;
            /** @enum {string} */
            status: "pending" | "processing" | "completed" | "failed";
            /** @description Null until `status` is `completed`. */
            result: (components["schemas"]["ImageResult"] | components["schemas"]["CodeResult"]) | null;
            /** @description Failure message when `status` is `failed`; otherwise null. */
            error: string | null;
            /** @description The request's prompt, as it was sent. Absent only from events recorded before the field existed. */
            prompt?: string;
            /** @description A batch line: the batch it belongs to (`POST /batches`). */
            batchId?: string;
            /** @description A batch line: its `custom_id`. */
            customId?: string;
            /** @description The request's `endUser` (a run output: its run's), when it had one (docs: Attribution). */
            endUser?: string;
            /** @description The request's `metadata` (a run output: its run's), when it had any. */
            metadata?: {
                [key: string]: string;
            };
            /** @description `GET /generations/{id}` while `processing`, once the provider has written something: what it has written so far. Working data, not the result: it may start over after a retry, and it is gone once the generation ends. */
            partial?: {
                /** @description Code outputs: the text written so far, as the provider wrote it (code fences included). */
                text?: string;
                /** @description Image outputs: a signed URL to the newest partial image. */
                previewUrl?: string;
            };
        };
        GenerationList: {
            /** @description Newest first; each item exactly as `GET /generations/{id}` returns it. */
            data: components["schemas"]["GenerationStatus"][];
            /** @description Pass as `cursor` for the next page; null on the last page. */
            nextCursor: string | null;
        };
        /** @description One line of a `POST /batches` body (JSON Lines): OpenAI's batch input format, with a `POST /generations` body. */
        BatchInputLine: {
            /** @description Yours, 1–64 characters, unique within the batch: the results name each line by it. */
            custom_id: string;
            /**
             * @description Always `POST`.
             * @constant
             */
            method: "POST";
            /**
             * @description Always `/api/v1/generations`.
             * @constant
             */
            url: "/api/v1/generations";
            body: components["schemas"]["GenerationRequest"];
        };
        /** @description A batch of generations (`POST /batches`). */
        Batch: {
            /** Format: uuid */
            id: string;
            /**
             * @description `in_progress`; `completed` once every line ended (whatever each outcome); `canceling` then `canceled` after a cancel; `expired` when lines were still waiting at `expiresAt`.
             * @enum {string}
             */
            status: "in_progress" | "completed" | "canceling" | "canceled" | "expired";
            requestCounts: {
                total: number;
                completed: number;
                /** @description Lines that failed, expired ones included. */
                failed: number;
                canceled: number;
            };
            createdAt: string;
            /** @description When its first line started. */
            startedAt: string | null;
            /** @description When its last line ended. */
            completedAt: string | null;
            /** @description 24 hours after creation: lines not started by then end `expired`, uncharged. */
            expiresAt: string;
            /** @description What its completed lines were charged, in microdollars. */
            spentMicros: number;
        };
        BatchList: {
            /** @description Newest first. */
            data: components["schemas"]["Batch"][];
            /** @description Pass as `cursor` for the next page; null on the last page. */
            nextCursor: string | null;
        };
        /** @description One line of `GET /batches/{id}/results` (JSON Lines). */
        BatchResultLine: {
            custom_id: string;
            /** Format: uuid */
            generationId: string;
            /** @description Completed lines: the generation's `GET /generations/{id}` body. */
            response?: {
                /** @constant */
                status_code: 200;
                body: components["schemas"]["GenerationStatus"];
            };
            /** @description Lines that did not complete: `canceled`, `expired`, `insufficient_quota`, `payment_required` or `generation_failed`, and the generation's error. */
            error?: {
                code: string;
                message: string;
            };
        };
        /** @description One event of `GET /batches/{id}/events`, its `data` line parsed as JSON. */
        BatchStreamItem: {
            /** @constant */
            event: "progress";
            id: string;
            data: components["schemas"]["Batch"];
        } | {
            /** @constant */
            event: "status";
            id: string;
            data: components["schemas"]["Batch"];
        };
        Model: {
            /** @description Value to pass as `model`. */
            id: string;
            name: string;
            /** @enum {string} */
            category: "image" | "text" | "svg";
            provider: string;
            supports_image_input: boolean;
            input_modalities: string[];
            output_modalities: string[];
            /** @description Marked-up price billed to the caller, in microdollars (per image, per second of upstream run time, or per input/output token); null when unknown. */
            pricing: {
                [key: string]: number;
            } | null;
            /** @description Present when the entry has a batch price: what lines of `POST /batches` are billed instead of `pricing`, in the same units (never above it); null when the cost is unknown. */
            batchPrice?: {
                [key: string]: number;
            } | null;
        };
        ModelList: {
            data: components["schemas"]["Model"][];
        };
        Workflow: {
            /** Format: uuid */
            id: string;
            name: string;
            graph: components["schemas"]["WorkflowGraph"];
            /** Format: date-time */
            createdAt: string;
            /**
             * Format: date-time
             * @description When it was last saved or received a run's results.
             */
            updatedAt: string;
            /** @description 1 when created, + 1 on every save; a run writing its results back does not change it. The `ETag` is this number in quotes: send it as `If-Match` to save only over this version. */
            version: number;
        };
        SaveWorkflowRequest: {
            /** @description 1 to 200 characters. */
            name: string;
            /** @description Nodes (`text`, `image` inputs; `prompt` nodes that generate; `output` nodes that receive) and edges `{ from, to }` between their ids. At most 200 nodes, 1,000 edges and 256 KB of JSON (written-back results not counted), nested at most 32 levels. Other properties (canvas positions, …) are kept as sent. */
            graph: {
                nodes: components["schemas"]["WorkflowNode"][];
                edges: components["schemas"]["WorkflowEdge"][];
            } & {
                [key: string]: unknown;
            };
        };
        /** @description The stored graph: its nodes and edges as saved, output nodes with the results completed runs wrote back. Saves take at most 200 nodes and 1,000 edges; graphs stored before that limit may hold up to 1,000 and 5,000. */
        WorkflowGraph: {
            nodes: components["schemas"]["WorkflowNode"][];
            edges: components["schemas"]["WorkflowEdge"][];
        } & {
            [key: string]: unknown;
        };
        WorkflowNode: components["schemas"]["WorkflowTextNode"] | components["schemas"]["WorkflowImageNode"] | components["schemas"]["WorkflowPromptNode"] | components["schemas"]["WorkflowOutputNode"];
        WorkflowTextNode: {
            id: string;
            /** @constant */
            kind: "text";
            text: string;
            label?: string;
        } & {
            [key: string]: unknown;
        };
        WorkflowImageNode: {
            id: string;
            /** @constant */
            kind: "image";
            /** @description An `https://` URL, a `data:` URI, or an image in the store the owner can read: `seed/…`, its own path, or a URL of this store. */
            url: string;
            mediaType?: string;
            label?: string;
        } & {
            [key: string]: unknown;
        };
        WorkflowPromptNode: {
            id: string;
            /** @constant */
            kind: "prompt";
            /** @enum {string} */
            output: "image" | "code" | "screen" | "design" | "video";
            prompt: string;
            /** @description A model id from `GET /models` that can produce `output`; omitted: the default image or code model. */
            model?: string;
            /** @enum {string} */
            aspectRatio?: "1:1" | "16:9" | "9:16" | "4:3" | "3:4" | "3:2" | "2:3";
            /** @enum {string} */
            targetLanguage?: "text" | "tsx" | "jsx" | "css" | "svg" | "json" | "typescript" | "javascript" | "mdx" | "markdown" | "glsl";
            label?: string;
        } & {
            [key: string]: unknown;
        };
        WorkflowOutputNode: {
            id: string;
            /** @constant */
            kind: "output";
            label?: string;
            /** @enum {string} */
            platform?: "x" | "linkedin" | "instagram" | "facebook" | "threads" | "tiktok";
            /** @description Written back by the last completed run that produced this output; a save that leaves it out keeps it, `null` removes it. */
            result?: components["schemas"]["WorkflowOutputResult"] | null;
        } & {
            [key: string]: unknown;
        };
        WorkflowOutputResult: {
            /** @enum {string} */
            type: "image" | "code" | "screen" | "design";
            path?: string;
            mediaType?: string;
            code?: string;
            expiredAt?: string;
        } & {
            [key: string]: unknown;
        };
        WorkflowEdge: {
            from: string;
            to: string;
        } & {
            [key: string]: unknown;
        };
        WorkflowSummary: {
            /** Format: uuid */
            id: string;
            name: string;
            /**
             * Format: date-time
             * @description When the workflow (its graph, name or written-back outputs) last changed.
             */
            updated_at: string;
        };
        WorkflowList: {
            data: components["schemas"]["WorkflowSummary"][];
        };
        /** @description Optional body of `POST /workflows/{id}/runs`: the run's attribution (docs: Attribution), which every output inherits. */
        RunRequest: {
            /** @description Optional. An opaque id of your own user this request is for: 1 to 128 printable characters (no control characters). Stored with the generation and its charge, returned in its bodies and events, never changed; `GET /generations?endUser=` filters by it. Required when the API key was made with `requireEndUser`. */
            endUser?: string;
            metadata?: components["schemas"]["Metadata"];
        };
        RunAccepted: {
            /**
             * Format: uuid
             * @description Run id.
             */
            id: string;
            /**
             * @description Always `pending`.
             * @constant
             */
            status: "pending";
        };
        WorkflowRun: {
            /**
             * Format: uuid
             * @description Run id.
             */
            id: string;
            /** Format: uuid */
            workflowId: string;
            /** @enum {string} */
            status: "pending" | "running" | "completed" | "failed";
            /** @description `total`: outputs (prompt → output edges) of the run; `completed`: outputs settled so far (completed, failed or skipped). */
            progress: {
                total: number;
                completed: number;
            };
            /** @description One entry per settled output, in the order they settled; grows while the run is in flight. */
            results: components["schemas"]["WorkflowRunResult"][];
            error: string | null;
            /** Format: date-time */
            createdAt: string;
            completedAt: string | null;
            /** @description The failed run this run retried (`POST /workflows/{id}/runs/{runId}/retry`), or null. */
            retryOf: string | null;
            /** @description The run's `endUser`, when it was started with one (a retry keeps its run's); its outputs carry it too. */
            endUser?: string;
            /** @description The run's `metadata`, when it was started with any (a retry keeps its run's). */
            metadata?: {
                [key: string]: string;
            };
        };
        WorkflowRunResult: {
            promptNodeId: string;
            outputNodeId: string;
            /**
             * @description `image`, `code`, `screen` or `design`; `video` outputs are reported with status `skipped`.
             * @enum {string}
             */
            type: "image" | "code" | "screen" | "design" | "video";
            /** @enum {string} */
            status: "completed" | "failed" | "skipped";
            /** @description The output node's label, when set. */
            label?: string;
            /**
             * @description Set on outputs created by a social-post campaign.
             * @enum {string}
             */
            platform?: "x" | "linkedin" | "instagram" | "facebook" | "threads" | "tiktok";
            /** @description Signed, expiring URL; completed image outputs, until they expire. */
            url?: string;
            /** @description Completed image outputs. */
            mediaType?: string;
            /** @description Text of completed code, screen (HTML) and design (SVG) outputs. */
            code?: string;
            /** @description Set when `status` is `failed`. */
            error?: string;
            /** @description Billed cost in microdollars (0 when nothing was charged). */
            costMicros?: number;
            /** @description Completed outputs: the catalog entry that produced the output and was billed — the prompt's model, or one of its fallbacks when its upstream was down. */
            model?: string;
            /** @description Completed image outputs removed under the service's retention period (KILN_RETENTION): when; `url` is then absent. */
            expiredAt?: string;
        };
        WorkflowRunSummary: {
            /**
             * Format: uuid
             * @description Run id.
             */
            id: string;
            /** @enum {string} */
            status: "pending" | "running" | "completed" | "failed";
            /** @description `total`: outputs (prompt → output edges) of the run; `completed`: outputs settled so far (completed, failed or skipped). */
            progress: {
                total: number;
                completed: number;
            };
            /** Format: date-time */
            createdAt: string;
            completedAt: string | null;
            /** @description The failed run this run retried, or null. */
            retryOf: string | null;
        };
        WorkflowRunList: {
            /** @description Newest first. */
            data: components["schemas"]["WorkflowRunSummary"][];
        };
        WorkflowRunGraph: {
            /**
             * Format: uuid
             * @description Run id.
             */
            runId: string;
            /** Format: uuid */
            workflowId: string;
            /** @description The nodes of the run's snapshot, in the order they were saved. Structure only: prompt and text values are not returned. */
            nodes: {
                id: string;
                /**
                 * @description `text` and `image` are inputs, `prompt` nodes generate, `output` nodes receive.
                 * @enum {string}
                 */
                kind: "text" | "image" | "prompt" | "output";
                label?: string;
                /**
                 * @description Prompt nodes: what they generate.
                 * @enum {string}
                 */
                output?: "image" | "code" | "screen" | "design" | "video";
                /** @description Prompt nodes: the model they name, when set. */
                model?: string;
                /** @enum {string} */
                platform?: "x" | "linkedin" | "instagram" | "facebook" | "threads" | "tiktok";
            }[];
            edges: {
                from: string;
                to: string;
            }[];
        };
        /** @description One event of `GET /generations/{id}/events`, its `data` line parsed as JSON. */
        GenerationStreamItem: {
            /** @constant */
            event: "status";
            /**
             * @description 1 pending, 2 processing, 3 completed or failed (the last event).
             * @enum {string}
             */
            id: "1" | "2" | "3";
            data: components["schemas"]["GenerationStatus"];
        } | {
            /** @constant */
            event: "delta";
            /** @description `2.S.C.P.G` (session, characters, previews and progress reports seen): send it as `Last-Event-ID` to resume right after this event. */
            id: string;
            data: components["schemas"]["StreamDelta"];
        } | {
            /** @constant */
            event: "preview";
            /** @description `2.S.C.P.G` (session, characters, previews and progress reports seen): send it as `Last-Event-ID` to resume right after this event. */
            id: string;
            data: components["schemas"]["StreamPreview"];
        } | {
            /** @constant */
            event: "progress";
            /** @description `2.S.C.P.G` (session, characters, previews and progress reports seen): send it as `Last-Event-ID` to resume right after this event. */
            id: string;
            data: components["schemas"]["StreamProgress"];
        } | {
            /** @constant */
            event: "reset";
            /** @description `2.S.C.P.G` (session, characters, previews and progress reports seen): send it as `Last-Event-ID` to resume right after this event. */
            id: string;
            data: components["schemas"]["StreamReset"];
        };
        /** @description One event of `GET /workflows/{id}/runs/{runId}/events`, its `data` line parsed as JSON. */
        WorkflowRunStreamItem: {
            /** @constant */
            event: "status";
            /** @description The event's `id`: send it as `Last-Event-ID` to resume after it. */
            id: string;
            data: components["schemas"]["WorkflowRun"];
        } | {
            /** @constant */
            event: "output";
            /** @description The event's `id`: send it as `Last-Event-ID` to resume after it. */
            id: string;
            data: components["schemas"]["WorkflowRunResult"];
        } | {
            /** @constant */
            event: "progress";
            /** @description The event's `id`: send it as `Last-Event-ID` to resume after it. */
            id: string;
            /** @description `total`: outputs (prompt → output edges) of the run; `completed`: outputs settled so far (completed, failed or skipped). */
            data: {
                total: number;
                completed: number;
            };
        } | {
            /** @constant */
            event: "output.progress";
            /** @description The event's `id`: send it as `Last-Event-ID` to resume after it. */
            id: string;
            data: components["schemas"]["OutputProgress"];
        } | {
            /** @constant */
            event: "delta";
            /** @description The event's `id`: send it as `Last-Event-ID` to resume after it. */
            id: string;
            data: components["schemas"]["OutputDelta"];
        } | {
            /** @constant */
            event: "preview";
            /** @description The event's `id`: send it as `Last-Event-ID` to resume after it. */
            id: string;
            data: components["schemas"]["OutputPreview"];
        } | {
            /** @constant */
            event: "reset";
            /** @description The event's `id`: send it as `Last-Event-ID` to resume after it. */
            id: string;
            data: components["schemas"]["OutputReset"];
        };
        /** @description Output text as it is written. The deltas after a `reset` (or from the start) concatenate to the text the provider wrote. */
        StreamDelta: {
            /** @description The next piece of output text, exactly as the provider wrote it (code fences included). */
            text: string;
            /** @description Characters (Unicode code points) of output text before this piece, in this execution. */
            offset: number;
        };
        /** @description A partial image, for models whose catalog entry asks for them. */
        StreamPreview: {
            /** @description Which partial image, from 0. */
            index: number;
            /** @description A signed URL to the partial image, as result URLs are. */
            url: string;
            mediaType: string;
        };
        /** @description Queue status or progress from the provider. */
        StreamProgress: {
            /** @description 0–100 when the provider says, else null. */
            percent: number | null;
            /** @description The provider's latest status or log line, when it gives one. */
            message: string | null;
        };
        /** @description The execution was cut off (a crash, a retry, a fallback model) and the output starts again: drop what was shown; offsets start at 0. */
        StreamReset: {
            /** @description The execution that follows (1, 2, …). */
            attempt: number;
        };
        /** @description An output in flight: its text as it is written (see `StreamDelta`). */
        OutputDelta: {
            /** @description The next piece of output text, exactly as the provider wrote it (code fences included). */
            text: string;
            /** @description Characters (Unicode code points) of output text before this piece, in this execution. */
            offset: number;
            /** @description The prompt node writing the output. */
            promptNodeId: string;
            /** @description The output node it fills. */
            outputNodeId: string;
        };
        /** @description An output in flight: a partial image. */
        OutputPreview: {
            /** @description Which partial image, from 0. */
            index: number;
            /** @description A signed URL to the partial image, as result URLs are. */
            url: string;
            mediaType: string;
            /** @description The prompt node writing the output. */
            promptNodeId: string;
            /** @description The output node it fills. */
            outputNodeId: string;
        };
        /** @description An output in flight: the provider's progress. */
        OutputProgress: {
            /** @description 0–100 when the provider says, else null. */
            percent: number | null;
            /** @description The provider's latest status or log line, when it gives one. */
            message: string | null;
            /** @description The prompt node writing the output. */
            promptNodeId: string;
            /** @description The output node it fills. */
            outputNodeId: string;
        };
        /** @description An output in flight starts over: drop its text. */
        OutputReset: {
            /** @description The execution that follows (1, 2, …). */
            attempt: number;
            /** @description The prompt node writing the output. */
            promptNodeId: string;
            /** @description The output node it fills. */
            outputNodeId: string;
        };
        ImageTransformRequest: {
            /** @description A store path, or a public or signed URL of this store, that the caller owns; or a shared image under `seed/`. */
            source: string;
            /** @enum {string} */
            op: "convert" | "compress" | "trim";
            options?: {
                /**
                 * @description Required for `convert`; `compress` defaults to `webp`; ignored by `trim`.
                 * @enum {string}
                 */
                format?: "png" | "jpeg" | "webp" | "avif";
                /** @description Encoder quality for `convert`, in (0, 1]. Default 0.9. */
                quality?: number;
                /** @description Byte budget for `compress` (required there). */
                targetBytes?: number;
                /** @description Bounds the longest output edge; capped at 8192; never enlarges. */
                maxDimension?: number;
            };
        };
        ImageTransformResult: {
            /** @description Public URL of the stored result; null when a trim found nothing to cut. */
            url: string | null;
            /** @description Bucket-relative storage path. */
            path: string | null;
            /** @description Pixels. */
            width: number | null;
            /** @description Pixels. */
            height: number | null;
            /** @description Output size in bytes. */
            bytes: number | null;
            format: ("png" | "jpeg" | "webp" | "avif") | null;
            /** @description compress only: false when targetBytes could not be reached and the smallest encode was stored. */
            withinTarget: boolean | null;
            /** @description trim only: false when no uniform edges were found (nothing stored). */
            trimmed: boolean | null;
        };
        Usage: {
            /** @enum {string} */
            tier: "legacy_free" | "pro" | "enterprise" | "blocked";
            /** @description Personal period budget; null = unlimited. */
            token_budget_micros: number | null;
            /** @description Personal usage this period, including reservations still in flight. */
            used_micros: number;
            /** @description Null = unlimited. */
            remaining_micros: number | null;
            /** @description When the personal budget resets. */
            resets_at: string | null;
            /** @enum {string} */
            scope: "personal" | "workspace";
            /** @description Set for workspace-bound keys. */
            workspace_id: string | null;
            /** @description Pooled budget; null when unlimited, no active Team plan, or access no longer resolves. */
            workspace_budget_micros: number | null;
            /** @description Pool usage; null without an active Team plan. */
            workspace_used_micros: number | null;
            /** @description Pool remainder, at least 0; null when unlimited or unavailable. */
            workspace_remaining_micros: number | null;
            /** @description When the pool resets. */
            workspace_resets_at: string | null;
            /** @description The calling key's own budget per period (`budgetMicros` at creation); null when it has none (or for sessions and MCP identities). */
            key_budget_micros: number | null;
            /** @description What the key has spent or holds this period; null when it has no budget of its own. */
            key_used_micros: number | null;
            /** @description The key's own budget left, at least 0; null when it has none. A generation needs room in both this and the pool. */
            key_remaining_micros: number | null;
        };
        DailyUsage: {
            /**
             * @description As in `GET /usage`: `workspace` for workspace-bound keys (the Team pool's days, every member's charges).
             * @enum {string}
             */
            scope: "personal" | "workspace";
            /** @description Set for workspace-bound keys. */
            workspace_id: string | null;
            /** @description First day of the range. */
            from: string;
            /** @description Last day of the range. */
            to: string;
            /** @description One entry per day and model with charges, by day then model. Over a whole period they add up exactly to `used_micros` (`workspace_used_micros` for a workspace-bound key) of `GET /usage`. */
            days: components["schemas"]["DailyUsageDay"][];
            /** @description With `groupBy`: the grouping asked for (`endUser` or `metadata.<key>`). */
            groupBy?: string;
            /** @description With `groupBy`: one row per day and group, by day, then `spend_micros` descending, then group (null last), a page at a time. The groups of a day add up exactly to that day's `days` rows (`spend_micros`, `charges`, `held_micros` and their parts). */
            groups?: components["schemas"]["DailyUsageGroup"][];
            /** @description With `groupBy`: pass as `cursor` for the next page of groups; null on the last page. */
            next_cursor?: string | null;
        };
        DailyUsageDay: {
            /** @description UTC day the charges were made on. */
            day: string;
            /** @description The catalog entry billed (the one that produced the output). */
            model_id: string;
            /** @description What the day's charges of this model count against the budget: settled charges at their cost plus reservations still in flight at their reserved amount (as `used_micros` counts them). */
            spend_micros: number;
            /** @description Charges counted: settled ones and reservations still in flight (released reservations cost nothing and are left out). */
            charges: number;
            /** @description The part of `spend_micros` still reserved by generations in flight; it becomes their actual cost (never more) when they settle. */
            held_micros: number;
            /** @description The day's figures made by lines of batches (`POST /batches`), billed at their batch price; `batch` and `interactive` add up exactly to them. */
            batch: {
                /** @description The part of `spend_micros` made by lines of batches (`POST /batches`), billed at their batch price. */
                spend_micros: number;
                /** @description The part of `charges` made by lines of batches (`POST /batches`), billed at their batch price. */
                charges: number;
                /** @description The part of `held_micros` made by lines of batches (`POST /batches`), billed at their batch price. */
                held_micros: number;
            };
            /** @description The day's figures made by everything else (`POST /generations`, workflow runs, MCP); `batch` and `interactive` add up exactly to them. */
            interactive: {
                /** @description The part of `spend_micros` made by everything else (`POST /generations`, workflow runs, MCP). */
                spend_micros: number;
                /** @description The part of `charges` made by everything else (`POST /generations`, workflow runs, MCP). */
                charges: number;
                /** @description The part of `held_micros` made by everything else (`POST /generations`, workflow runs, MCP). */
                held_micros: number;
            };
        };
        DailyUsageGroup: {
            /** @description UTC day the charges were made on. */
            day: string;
            /** @description The end user, or the value of the metadata key; null for the day's charges without it (the day's total minus its other groups). */
            group: string | null;
            /** @description As a day's `spend_micros`: settled charges at their cost plus reservations in flight at their reserved amount. */
            spend_micros: number;
            /** @description Charges counted: settled ones and reservations still in flight. */
            charges: number;
            /** @description The part of `spend_micros` still reserved by generations in flight. */
            held_micros: number;
            /** @description The day's figures made by lines of batches (`POST /batches`), billed at their batch price; `batch` and `interactive` add up exactly to them. */
            batch: {
                /** @description The part of `spend_micros` made by lines of batches (`POST /batches`), billed at their batch price. */
                spend_micros: number;
                /** @description The part of `charges` made by lines of batches (`POST /batches`), billed at their batch price. */
                charges: number;
                /** @description The part of `held_micros` made by lines of batches (`POST /batches`), billed at their batch price. */
                held_micros: number;
            };
            /** @description The day's figures made by everything else (`POST /generations`, workflow runs, MCP); `batch` and `interactive` add up exactly to them. */
            interactive: {
                /** @description The part of `spend_micros` made by everything else (`POST /generations`, workflow runs, MCP). */
                spend_micros: number;
                /** @description The part of `charges` made by everything else (`POST /generations`, workflow runs, MCP). */
                charges: number;
                /** @description The part of `held_micros` made by everything else (`POST /generations`, workflow runs, MCP). */
                held_micros: number;
            };
        };
        EndUserList: {
            /** @description By `usedMicros` descending, then `endUser`. */
            data: components["schemas"]["EndUser"][];
            /** @description Pass as `cursor` for the next page; null on the last page. */
            nextCursor: string | null;
        };
        WebhookEndpoint: {
            /** Format: uuid */
            id: string;
            url: string;
            /** @description The event types this endpoint receives. */
            events: ("generation.completed" | "generation.failed" | "workflow_run.completed" | "workflow_run.failed" | "budget.threshold" | "webhook.test" | "workflow.saved" | "workflow.deleted" | "batch.completed" | "batch.canceled" | "batch.expired")[];
            description: string | null;
            enabled: boolean;
            /** @description Why the service disabled it (a 410, or 5 days of failures); null when enabled or disabled by you. */
            disabledReason: string | null;
            /** Format: date-time */
            createdAt: string;
        };
        WebhookEndpointWithSecret: {
            /** Format: uuid */
            id: string;
            url: string;
            /** @description The event types this endpoint receives. */
            events: ("generation.completed" | "generation.failed" | "workflow_run.completed" | "workflow_run.failed" | "budget.threshold" | "webhook.test" | "workflow.saved" | "workflow.deleted" | "batch.completed" | "batch.canceled" | "batch.expired")[];
            description: string | null;
            enabled: boolean;
            /** @description Why the service disabled it (a 410, or 5 days of failures); null when enabled or disabled by you. */
            disabledReason: string | null;
            /** Format: date-time */
            createdAt: string;
            /** @description `whsec_` + base64 of 32 random bytes: the Standard Webhooks signing secret. Shown only here and by rotate-secret. */
            secret: string;
        };
        WebhookEndpointList: {
            data: components["schemas"]["WebhookEndpoint"][];
        };
        WebhookSecret: {
            /** @description The new `whsec_` secret. For 24 h deliveries carry signatures under the new and the old secret. */
            secret: string;
        };
        WebhookDelivery: {
            /** @description The message's `webhook-id` header (`msg_<event id>`): the event's, the same at every endpoint, on every attempt and redelivery, and in `kiln listen`'s forwards. What redeliver takes. */
            id: string;
            /** @description The same as `id`: the message's `webhook-id` header. */
            webhookId: string;
            /**
             * Format: uuid
             * @description The delivery's own id (one event's message to this endpoint); redeliver takes it too.
             */
            deliveryId: string;
            /** @enum {string} */
            event: "generation.completed" | "generation.failed" | "workflow_run.completed" | "workflow_run.failed" | "budget.threshold" | "webhook.test" | "workflow.saved" | "workflow.deleted" | "batch.completed" | "batch.canceled" | "batch.expired";
            /** @enum {string} */
            status: "pending" | "delivered" | "failed";
            attempts: number;
            lastStatusCode: number | null;
            /** @description Error class and a short reason of the last failed attempt (`timeout`, `refused`, `tls`, `redirect`, `status`); never a response body. */
            lastError: string | null;
            /** Format: date-time */
            createdAt: string;
            deliveredAt: string | null;
            /** @description When a pending delivery is attempted next. */
            nextAttemptAt: string | null;
        };
        WebhookDeliveryList: {
            data: components["schemas"]["WebhookDelivery"][];
            /** @description Pass as `cursor` for the next (older) page; null on the last page. */
            nextCursor: string | null;
        };
        /** @description The body of every webhook delivery and the `data` of every `GET /events` event. */
        EventMessage: {
            /** @enum {string} */
            type: "generation.completed" | "generation.failed" | "workflow_run.completed" | "workflow_run.failed" | "budget.threshold" | "webhook.test" | "workflow.saved" | "workflow.deleted" | "batch.completed" | "batch.canceled" | "batch.expired";
            /** Format: date-time */
            timestamp: string;
            /** @description For generation.* the `GET /generations/{id}` body; for workflow_run.* the `GET /workflows/{id}/runs/{runId}` body; for budget.threshold `{ scope, workspaceId, threshold, usedMicros, budgetMicros, periodStart, resetsAt }`; for workflow.saved and workflow.deleted the workflow without its graph, `{ id, name, version, createdAt, updatedAt, deletedAt }` (a run writing its results back is not a save: workflow_run.completed tells of it); for batch.* the `GET /batches/{id}` body. */
            data: unknown;
        };
        /** @description One event of `GET /events`, its `data` line parsed as JSON: the message a webhook receives for it; `event` is its `type`. */
        EventStreamItem: {
            /** @enum {string} */
            event: "generation.completed" | "generation.failed" | "workflow_run.completed" | "workflow_run.failed" | "budget.threshold" | "webhook.test" | "workflow.saved" | "workflow.deleted" | "batch.completed" | "batch.canceled" | "batch.expired";
            /** @description `<tx>-<n>`: send it as `Last-Event-ID` to resume after this event. */
            id: string;
            data: components["schemas"]["EventMessage"];
        };
        Key: {
            /**
             * Format: uuid
             * @description Stable across rotations.
             */
            id: string;
            name: string | null;
            /** @description The first characters of the current secret, to tell keys apart. */
            prefix: string;
            scopes: ("read" | "write" | "keys" | "admin")[];
            rpm: number | null;
            /** @description The Team workspace it bills; null = personal. */
            workspaceId: string | null;
            /** @description Its own budget per period; null = none. */
            budgetMicros: number | null;
            /** @description Spent and held this period of its scope. */
            usedMicros: number;
            /** Format: date-time */
            createdAt: string;
            /** @description Last authenticated use, to the minute. */
            lastUsedAt: string | null;
            expiresAt: string | null;
            revokedAt: string | null;
            /** @description Its requests that spend must name an `endUser` (`POST /keys` `requireEndUser`). */
            requireEndUser: boolean;
            /** @description How many secrets of the key work now: the current one (while the key is neither revoked nor expired) plus the one the last rotation replaced while its grace lasts. 0 once revoked or expired. */
            liveSecrets: number;
            /** @description When the older secret a rotation replaced stops working (rounded up to the second); null when no older secret works. */
            graceEndsAt: string | null;
        };
        KeyWithSecret: {
            /**
             * Format: uuid
             * @description Stable across rotations.
             */
            id: string;
            name: string | null;
            /** @description The first characters of the current secret, to tell keys apart. */
            prefix: string;
            scopes: ("read" | "write" | "keys" | "admin")[];
            rpm: number | null;
            /** @description The Team workspace it bills; null = personal. */
            workspaceId: string | null;
            /** @description Its own budget per period; null = none. */
            budgetMicros: number | null;
            /** @description Spent and held this period of its scope. */
            usedMicros: number;
            /** Format: date-time */
            createdAt: string;
            /** @description Last authenticated use, to the minute. */
            lastUsedAt: string | null;
            expiresAt: string | null;
            revokedAt: string | null;
            /** @description Its requests that spend must name an `endUser` (`POST /keys` `requireEndUser`). */
            requireEndUser: boolean;
            /** @description How many secrets of the key work now: the current one (while the key is neither revoked nor expired) plus the one the last rotation replaced while its grace lasts. 0 once revoked or expired. */
            liveSecrets: number;
            /** @description When the older secret a rotation replaced stops working (rounded up to the second); null when no older secret works. */
            graceEndsAt: string | null;
            /** @description The secret, shown this once: store it now. Only its hash is kept. */
            key: string;
        };
        KeyList: {
            data: components["schemas"]["Key"][];
        };
        AuditEntry: {
            /** Format: uuid */
            id: string;
            /** Format: date-time */
            at: string;
            actor: {
                /**
                 * @description key: an API key; session: a console session; operator: the operator's CLI or SQL; identity: an OIDC identity (an MCP client, an SSO sign-in, an automatic link).
                 * @enum {string}
                 */
                type: "key" | "session" | "operator" | "identity";
                /** @description The key or session id, the identity's account (MCP tool calls) or its issuer and subject separated by a space (a sign-in, an automatic link), or the operator's database user. */
                id: string | null;
            };
            /** @description Noun, then verb in the past tense: `key.created`, `key.rotated`, `key.revoked`, `key.expired`, `webhook.deleted`, `session.created`, `session.refused`, `account.updated`, `identity.linked`, `identity.unlinked`, … (all listed in docs/security.md) */
            action: string;
            target: {
                type: string;
                id: string | null;
            };
            ip: string | null;
            /** @description The X-Request-ID of the request that made the change. */
            requestId: string | null;
            /** @description What changed (never a secret). */
            details: {
                [key: string]: unknown;
            };
        };
        AuditPage: {
            data: components["schemas"]["AuditEntry"][];
            /** @description Pass as `cursor` for the next (older) page; null on the last. */
            nextCursor: string | null;
        };
        EndUserBudget: {
            /** @description The end user. */
            endUser: string;
            /** @description The cap per period; null = no cap (the use shown is then this calendar month's). */
            budgetMicros: number | null;
            /**
             * @description The cap's period (`month` when there is no cap).
             * @enum {string}
             */
            period: "day" | "month";
            /** @description Generation starts per minute; null = none. */
            rpm: number | null;
            /**
             * Format: date-time
             * @description Start of the current period (UTC midnight of the day, or of the month's first day).
             */
            periodStart: string;
            /** @description Settled plus held this period (as `GET /usage` counts `usedMicros`). */
            usedMicros: number;
            /** @description Of that, what reservations of generations still running hold. */
            heldMicros: number;
            /** @description budgetMicros − usedMicros (never below 0); null without a cap. */
            remainingMicros: number | null;
            /** @description When the cap was last set; null without a cap. */
            updatedAt: string | null;
        };
        SetEndUserBudgetRequest: {
            /** @description What the end user may spend per period, in microdollars (0 refuses every request that spends). */
            budgetMicros: number;
            /**
             * @description `day`: the UTC day; `month`: the calendar month in UTC. Not the account's billing period.
             * @enum {string}
             */
            period: "day" | "month";
            rpm?: number | null;
        };
        /** @description The caller, as `GET /me` answers it. */
        Me: {
            /**
             * Format: uuid
             * @description The account (user) the credential belongs to.
             */
            accountId: string;
            email: string;
            /**
             * @description What authenticated the request: an API key, or a console session's cookie.
             * @enum {string}
             */
            credential: "key" | "session";
            /** @description The scopes of that key or session, as they apply now: `admin` counts only while the user is an admin. */
            scopes: ("read" | "write" | "keys" | "admin")[];
            /** @description The Team workspace the credential acts in and bills (a workspace-bound key, or the session's workspace); null = the personal budget. */
            workspaceId: string | null;
            /** @description The user is an admin (set by an operator, or by the SSO admin group at the last sign-in). The admin routes also need the `admin` scope. */
            admin: boolean;
        };
        Session: {
            user: {
                /** Format: uuid */
                id: string;
                email: string;
                /** @description An admin (set by an operator, or by KILN_OIDC_ADMIN_GROUP at the last sign-in): the session has the `admin` scope. */
                admin: boolean;
            };
            /** @description The Team workspace the session acts in and bills; null = personal. */
            workspaceId: string | null;
            /** @description The workspaces the user is a member of: what `PUT /session/workspace` accepts. */
            workspaces: {
                /** Format: uuid */
                id: string;
                name: string;
                /** @enum {string} */
                role: "owner" | "admin" | "member";
            }[];
            /**
             * Format: date-time
             * @description When the session ends unless used again (KILN_SESSION_IDLE after its last use, at most 7 days after sign-in).
             */
            expiresAt: string;
        };
        SwitchWorkspaceRequest: {
            /** @description One of `workspaces[].id`, or null to act personally. */
            workspaceId: string | null;
        };
        AdminAccount: {
            /** Format: uuid */
            id: string;
            email: string;
            /** @enum {string} */
            tier: "legacy_free" | "pro" | "enterprise" | "blocked";
            /** @description Personal budget per period; null = unlimited. */
            budgetMicros: number | null;
            /** @description Held + settled this period (what GET /usage calls used). */
            usedMicros: number;
            /** @description Live API keys (not revoked, not expired). */
            keyCount: number;
            /** @description An admin (operator flag or SSO group). */
            admin: boolean;
        };
        AdminAccountPage: {
            data: components["schemas"]["AdminAccount"][];
            /** @description Pass as `cursor` for the next page; null on the last. */
            nextCursor: string | null;
        };
        AdminAccountDetail: {
            /** Format: uuid */
            id: string;
            email: string;
            /** @enum {string} */
            tier: "legacy_free" | "pro" | "enterprise" | "blocked";
            /** @description Personal budget per period; null = unlimited. */
            budgetMicros: number | null;
            /** @description Held + settled this period (what GET /usage calls used). */
            usedMicros: number;
            /** @description Live API keys (not revoked, not expired). */
            keyCount: number;
            /** @description An admin (operator flag or SSO group). */
            admin: boolean;
            /** Format: date-time */
            periodStart: string;
            /**
             * Format: date-time
             * @description When this period ends and spend starts again from 0.
             */
            resetsAt: string;
            /** Format: date-time */
            createdAt: string;
            /** @description Every API key of the account, revoked ones included (never a secret or hash). */
            keys: components["schemas"]["Key"][];
            workspaces: {
                /** Format: uuid */
                id: string;
                name: string;
                /** @enum {string} */
                role: "owner" | "admin" | "member";
            }[];
        };
        RevokeKeysResult: {
            /** @description Keys revoked by this call (0 when none was live). */
            revoked: number;
            account: components["schemas"]["AdminAccountDetail"];
        };
        AdminWorkspace: {
            /** Format: uuid */
            id: string;
            name: string;
            /** Format: uuid */
            ownerId: string;
            ownerEmail: string | null;
            /** @enum {string} */
            planStatus: "none" | "active" | "lapsed";
            /** @description Team budget per period; null = unlimited. */
            budgetMicros: number | null;
            /** @description Held + settled on the Team pool this period. */
            usedMicros: number;
            /** @description Current members. */
            memberCount: number;
            /** Format: date-time */
            createdAt: string;
        };
        AdminWorkspacePage: {
            data: components["schemas"]["AdminWorkspace"][];
            /** @description Pass as `cursor` for the next page; null on the last. */
            nextCursor: string | null;
        };
        AdminWorkspaceDetail: {
            /** Format: uuid */
            id: string;
            name: string;
            /** Format: uuid */
            ownerId: string;
            ownerEmail: string | null;
            /** @enum {string} */
            planStatus: "none" | "active" | "lapsed";
            /** @description Team budget per period; null = unlimited. */
            budgetMicros: number | null;
            /** @description Held + settled on the Team pool this period. */
            usedMicros: number;
            /** @description Current members. */
            memberCount: number;
            /** Format: date-time */
            createdAt: string;
            members: {
                /** Format: uuid */
                accountId: string;
                email: string;
                /** @enum {string} */
                role: "owner" | "admin" | "member";
                /** Format: date-time */
                joinedAt: string;
                /** @description Set for former members. */
                leftAt: string | null;
            }[];
        };
        AdminModel: {
            id: string;
            name: string;
            /** @enum {string} */
            category: "image" | "text" | "svg";
            provider: string;
            enabled: boolean;
            /** @description Billed price = upstream cost × markup (the entry's own, else KILN_DEFAULT_MARKUP). */
            markup: number;
            /** @description The markup lines of batches are billed at (`batchMarkup` of the entry, never above `markup`); null: they bill at `markup`. */
            batchMarkup: number | null;
            /** @description What the upstream charges, in microdollars (per image, per second, per input/output token); null when unknown. */
            cost: {
                [key: string]: number;
            } | null;
            /** @description What callers are billed (cost × markup), as GET /models shows it. */
            pricing: {
                [key: string]: number;
            } | null;
            /** @description What batch lines are billed (cost × batchMarkup), as GET /models shows it as `batchPrice`; null when the entry has no batch markup or its cost is unknown. */
            batchPricing: {
                [key: string]: number;
            } | null;
            fallbacks: string[];
            /** Format: date-time */
            updatedAt: string;
        };
        AdminModelList: {
            data: components["schemas"]["AdminModel"][];
        };
        AdminHealth: {
            /** @description Each network catalog entry's upstream as the workers see it. */
            providers: {
                modelId: string;
                provider: string;
                /**
                 * @description skipped: its fallback is taken at once until skippedUntil; trial: one call in flight decides.
                 * @enum {string}
                 */
                state: "healthy" | "failing" | "skipped" | "trial" | "awaiting_trial";
                consecutiveFailures: number;
                skippedUntil: string | null;
                lastError: string | null;
                lastErrorAt: string | null;
                lastSuccessAt: string | null;
                calls15m: number;
                failures15m: number;
                errorRate15m: number | null;
            }[];
            /** @description The job queue (graphile-worker). */
            queue: {
                jobs: number;
                /** @description Waiting for a worker now. */
                ready: number;
                running: number;
                /** @description Waiting for their run time (retries with backoff, delayed jobs). */
                scheduled: number;
                oldestReadyAt: string | null;
                /** @description How long the oldest ready job has waited. */
                oldestReadySeconds: number | null;
            };
            /** @description The webhook backlog. */
            webhooks: {
                pending: number;
                /** @description Pending deliveries whose next attempt is due. */
                due: number;
                oldestDueAt: string | null;
            };
        };
    };
    responses: never;
    parameters: never;
    requestBodies: never;
    headers: {
        /** @description Identifies the request in logs. */
        RequestId: string;
        /** @description Whole seconds to wait before retrying. */
        RetryAfter: number;
        /** @description `Bearer`: the request needs a valid API key in `Authorization: Bearer …`. */
        WwwAuthenticate: string;
    };
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    listModels: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The catalog. */
            200: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    /** @description Cached for 5 minutes. */
                    "cache-control"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ModelList"];
                };
            };
            /** @description Missing, malformed, revoked or unknown API key. */
            401: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "www-authenticate": components["headers"]["WwwAuthenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope this endpoint needs. */
            403: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limited (`rate_limited`, with `retry-after`) or budget exhausted (`insufficient_quota`). */
            429: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unexpected error. */
            500: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency (such as the rate limiter) is briefly unavailable; retry with backoff. */
            503: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getUsage: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Usage for the key's billing scope. */
            200: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    /** @description Always `no-store`. */
                    "cache-control"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Usage"];
                };
            };
            /** @description Missing, malformed, revoked or unknown API key. */
            401: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "www-authenticate": components["headers"]["WwwAuthenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope this endpoint needs. */
            403: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limited (`rate_limited`, with `retry-after`) or budget exhausted (`insufficient_quota`). */
            429: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency (such as the rate limiter) is briefly unavailable; retry with backoff. */
            503: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getDailyUsage: {
        parameters: {
            query?: {
                from?: string;
                to?: string;
                groupBy?: string;
                limit?: number;
                cursor?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Usage per day and model (and, with `groupBy`, a page of groups). */
            200: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    /** @description Always `no-store`. */
                    "cache-control"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DailyUsage"];
                };
            };
            /** @description Invalid request. */
            400: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, revoked or unknown API key. */
            401: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "www-authenticate": components["headers"]["WwwAuthenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope this endpoint needs. */
            403: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limited (`rate_limited`, with `retry-after`) or budget exhausted (`insufficient_quota`). */
            429: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency (such as the rate limiter) is briefly unavailable; retry with backoff. */
            503: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    listEndUsers: {
        parameters: {
            query?: {
                from?: string;
                to?: string;
                limit?: number;
                cursor?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of end users. */
            200: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    /** @description Always `no-store`. */
                    "cache-control"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EndUserList"];
                };
            };
            /** @description Invalid request. */
            400: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, revoked or unknown API key. */
            401: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "www-authenticate": components["headers"]["WwwAuthenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope this endpoint needs. */
            403: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limited (`rate_limited`, with `retry-after`) or budget exhausted (`insufficient_quota`). */
            429: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency (such as the rate limiter) is briefly unavailable; retry with backoff. */
            503: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    listGenerations: {
        parameters: {
            query?: {
                limit?: number;
                cursor?: string;
                status?: string;
                type?: string;
                model?: string;
                since?: string;
                batchId?: string;
                endUser?: string;
                metadata?: {
                    [key: string]: string;
                };
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of generations. */
            200: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    /** @description Always `no-store`. */
                    "cache-control"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["GenerationList"];
                };
            };
            /** @description Invalid request. */
            400: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, revoked or unknown API key. */
            401: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "www-authenticate": components["headers"]["WwwAuthenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope this endpoint needs. */
            403: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limited (`rate_limited`, with `retry-after`) or budget exhausted (`insufficient_quota`). */
            429: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency (such as the rate limiter) is briefly unavailable; retry with backoff. */
            503: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    createGeneration: {
        parameters: {
            query?: never;
            header?: {
                /** @description `wait=N` (RFC 7240), 1 ≤ N ≤ 60: wait up to N seconds for the job or run to settle before answering. Other preferences are ignored, and so is a `wait` outside 1–60 (the request is answered as without it). When honoured, the response carries `preference-applied: wait=N`. */
                Prefer?: string;
                /** @description 1 to 255 printable ASCII characters (0x20–0x7E), unique per request you mean to make once, e.g. a UUID. The first accepted request with a key is kept for KILN_IDEMPOTENCY_TTL_SECONDS (default 24 h) per account and operation; a repeat with the same key and body answers the same id (header `idempotent-replayed: true`) and starts nothing new; another body with that key is a 422 `idempotency_conflict`. Refused requests (400, 401, 402, 403, 429, 503) are not kept: retry them with the same key. */
                "Idempotency-Key"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["GenerationRequest"];
            };
        };
        responses: {
            /** @description With `Prefer: wait=N`: the job completed or failed within N seconds; its status. */
            200: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    /** @description The generation's URL. */
                    location?: string;
                    /** @description Always `no-store`. */
                    "cache-control"?: string;
                    /** @description When `Prefer: wait=N` was honoured: `wait=N`. */
                    "preference-applied"?: string;
                    /** @description `true` when the job was accepted earlier with this Idempotency-Key and body. */
                    "idempotent-replayed"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["GenerationStatus"];
                };
            };
            /** @description Accepted; the job is pending (with `Prefer: wait`, it did not settle in time; replayed, it was accepted earlier with this Idempotency-Key). */
            202: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    /** @description The generation's URL. */
                    location?: string;
                    /** @description Always `no-store`. */
                    "cache-control"?: string;
                    /** @description When `Prefer: wait=N` was honoured: `wait=N`. */
                    "preference-applied"?: string;
                    /** @description `true` when this is the stored answer of an earlier request with the same Idempotency-Key and body. */
                    "idempotent-replayed"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["GenerationAccepted"];
                };
            };
            /** @description Invalid request. */
            400: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, revoked or unknown API key. */
            401: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "www-authenticate": components["headers"]["WwwAuthenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key bills to a workspace that cannot be charged. */
            402: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope this endpoint needs. */
            403: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The request body is larger than the server accepts (`invalid_request`). */
            413: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The request body is not `application/json` (`invalid_request`). */
            415: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The `Idempotency-Key` was already used with a different request (`idempotency_conflict`). */
            422: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limited (`rate_limited`, with `retry-after`) or budget exhausted (`insufficient_quota`). */
            429: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unexpected error. */
            500: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency (such as the rate limiter) is briefly unavailable; retry with backoff. */
            503: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getGeneration: {
        parameters: {
            query?: never;
            header?: {
                /** @description `wait=N` (RFC 7240), 1 ≤ N ≤ 60: wait up to N seconds for the job or run to settle before answering. Other preferences are ignored, and so is a `wait` outside 1–60 (the request is answered as without it). When honoured, the response carries `preference-applied: wait=N`. */
                Prefer?: string;
            };
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The generation. */
            200: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    /** @description Always `no-store`. */
                    "cache-control"?: string;
                    /** @description When `Prefer: wait=N` was honoured: `wait=N`. */
                    "preference-applied"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["GenerationStatus"];
                };
            };
            /** @description Invalid request. */
            400: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, revoked or unknown API key. */
            401: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "www-authenticate": components["headers"]["WwwAuthenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope this endpoint needs. */
            403: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found, or not owned by the caller. */
            404: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limited (`rate_limited`, with `retry-after`) or budget exhausted (`insufficient_quota`). */
            429: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency (such as the rate limiter) is briefly unavailable; retry with backoff. */
            503: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    streamGenerationEvents: {
        parameters: {
            query?: never;
            header?: {
                /** @description The `id` of the last event received, to resume a stream after a disconnect: events up to it are not sent again. Not a whole number: the stream starts over. */
                "Last-Event-ID"?: string;
            };
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The event stream. */
            200: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "text/event-stream": components["schemas"]["GenerationStreamItem"];
                };
            };
            /** @description Invalid request. */
            400: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, revoked or unknown API key. */
            401: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "www-authenticate": components["headers"]["WwwAuthenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope this endpoint needs. */
            403: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found, or not owned by the caller. */
            404: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limited (`rate_limited`, with `retry-after`) or budget exhausted (`insufficient_quota`). */
            429: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency (such as the rate limiter) is briefly unavailable; retry with backoff. */
            503: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    cancelGeneration: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The canceled generation. */
            200: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    /** @description Always `no-store`. */
                    "cache-control"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["GenerationStatus"];
                };
            };
            /** @description Invalid request. */
            400: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, revoked or unknown API key. */
            401: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "www-authenticate": components["headers"]["WwwAuthenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope this endpoint needs. */
            403: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found, or not owned by the caller. */
            404: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict: the resource is not in a state that allows this (`conflict`), e.g. the job already ended. */
            409: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limited (`rate_limited`, with `retry-after`) or budget exhausted (`insufficient_quota`). */
            429: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency (such as the rate limiter) is briefly unavailable; retry with backoff. */
            503: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    transformImage: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ImageTransformRequest"];
            };
        };
        responses: {
            /** @description The stored result (public URL). */
            200: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ImageTransformResult"];
                };
            };
            /** @description Invalid request. */
            400: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, revoked or unknown API key. */
            401: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "www-authenticate": components["headers"]["WwwAuthenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope this endpoint needs. */
            403: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found, or not owned by the caller. */
            404: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The request body is larger than the server accepts (`invalid_request`). */
            413: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The request body is not `application/json` (`invalid_request`). */
            415: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limited (`rate_limited`, with `retry-after`) or budget exhausted (`insufficient_quota`). */
            429: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unexpected error. */
            500: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency (such as the rate limiter) is briefly unavailable; retry with backoff. */
            503: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    listBatches: {
        parameters: {
            query?: {
                limit?: number;
                cursor?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of batches. */
            200: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    /** @description Always `no-store`. */
                    "cache-control"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BatchList"];
                };
            };
            /** @description Invalid request. */
            400: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, revoked or unknown API key. */
            401: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "www-authenticate": components["headers"]["WwwAuthenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope this endpoint needs. */
            403: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limited (`rate_limited`, with `retry-after`) or budget exhausted (`insufficient_quota`). */
            429: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency (such as the rate limiter) is briefly unavailable; retry with backoff. */
            503: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    createBatch: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1 to 255 printable ASCII characters (0x20–0x7E), unique per request you mean to make once, e.g. a UUID. The first accepted request with a key is kept for KILN_IDEMPOTENCY_TTL_SECONDS (default 24 h) per account and operation; a repeat with the same key and body answers the same id (header `idempotent-replayed: true`) and starts nothing new; another body with that key is a 422 `idempotency_conflict`. Refused requests (400, 401, 402, 403, 429, 503) are not kept: retry them with the same key. */
                "Idempotency-Key"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/jsonl": components["schemas"]["BatchInputLine"];
                "application/x-ndjson": components["schemas"]["BatchInputLine"];
                "application/jsonlines": components["schemas"]["BatchInputLine"];
                "application/x-jsonlines": components["schemas"]["BatchInputLine"];
            };
        };
        responses: {
            /** @description Accepted; the batch is in progress (replayed: accepted earlier with this Idempotency-Key). */
            202: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    /** @description The batch's URL. */
                    location?: string;
                    /** @description Always `no-store`. */
                    "cache-control"?: string;
                    /** @description `true` when this is the batch of an earlier request with the same Idempotency-Key and body. */
                    "idempotent-replayed"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Batch"];
                };
            };
            /** @description Invalid request. */
            400: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, revoked or unknown API key. */
            401: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "www-authenticate": components["headers"]["WwwAuthenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope this endpoint needs. */
            403: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict: the resource is not in a state that allows this (`conflict`), e.g. the job already ended. */
            409: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The request body is larger than the server accepts (`invalid_request`). */
            413: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The request body is not `application/json` (`invalid_request`). */
            415: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The `Idempotency-Key` was already used with a different request (`idempotency_conflict`). */
            422: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limited (`rate_limited`, with `retry-after`) or budget exhausted (`insufficient_quota`). */
            429: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency (such as the rate limiter) is briefly unavailable; retry with backoff. */
            503: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getBatch: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The batch. */
            200: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    /** @description Always `no-store`. */
                    "cache-control"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Batch"];
                };
            };
            /** @description Invalid request. */
            400: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, revoked or unknown API key. */
            401: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "www-authenticate": components["headers"]["WwwAuthenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope this endpoint needs. */
            403: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found, or not owned by the caller. */
            404: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limited (`rate_limited`, with `retry-after`) or budget exhausted (`insufficient_quota`). */
            429: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency (such as the rate limiter) is briefly unavailable; retry with backoff. */
            503: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    cancelBatch: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The batch, canceling or canceled. */
            200: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    /** @description Always `no-store`. */
                    "cache-control"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Batch"];
                };
            };
            /** @description Invalid request. */
            400: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, revoked or unknown API key. */
            401: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "www-authenticate": components["headers"]["WwwAuthenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope this endpoint needs. */
            403: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found, or not owned by the caller. */
            404: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict: the resource is not in a state that allows this (`conflict`), e.g. the job already ended. */
            409: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limited (`rate_limited`, with `retry-after`) or budget exhausted (`insufficient_quota`). */
            429: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency (such as the rate limiter) is briefly unavailable; retry with backoff. */
            503: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getBatchResults: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The results. */
            200: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    /** @description Always `no-store`. */
                    "cache-control"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/jsonl": components["schemas"]["BatchResultLine"];
                };
            };
            /** @description Invalid request. */
            400: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, revoked or unknown API key. */
            401: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "www-authenticate": components["headers"]["WwwAuthenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope this endpoint needs. */
            403: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found, or not owned by the caller. */
            404: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limited (`rate_limited`, with `retry-after`) or budget exhausted (`insufficient_quota`). */
            429: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency (such as the rate limiter) is briefly unavailable; retry with backoff. */
            503: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    streamBatchEvents: {
        parameters: {
            query?: never;
            header?: {
                /** @description The `id` of the last event received, to resume a stream after a disconnect: events up to it are not sent again. Not a whole number: the stream starts over. */
                "Last-Event-ID"?: string;
            };
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The event stream. */
            200: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "text/event-stream": components["schemas"]["BatchStreamItem"];
                };
            };
            /** @description Invalid request. */
            400: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, revoked or unknown API key. */
            401: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "www-authenticate": components["headers"]["WwwAuthenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope this endpoint needs. */
            403: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found, or not owned by the caller. */
            404: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limited (`rate_limited`, with `retry-after`) or budget exhausted (`insufficient_quota`). */
            429: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency (such as the rate limiter) is briefly unavailable; retry with backoff. */
            503: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    listWorkflows: {
        parameters: {
            query?: {
                limit?: number;
                offset?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of workflow summaries. */
            200: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    /** @description Always `no-store`. */
                    "cache-control"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WorkflowList"];
                };
            };
            /** @description Invalid request. */
            400: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, revoked or unknown API key. */
            401: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "www-authenticate": components["headers"]["WwwAuthenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope this endpoint needs. */
            403: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limited (`rate_limited`, with `retry-after`) or budget exhausted (`insufficient_quota`). */
            429: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unexpected error. */
            500: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency (such as the rate limiter) is briefly unavailable; retry with backoff. */
            503: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    createWorkflow: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1 to 255 printable ASCII characters (0x20–0x7E), unique per request you mean to make once, e.g. a UUID. The first accepted request with a key is kept for KILN_IDEMPOTENCY_TTL_SECONDS (default 24 h) per account and operation; a repeat with the same key and body answers the same id (header `idempotent-replayed: true`) and starts nothing new; another body with that key is a 422 `idempotency_conflict`. Refused requests (400, 401, 402, 403, 429, 503) are not kept: retry them with the same key. */
                "Idempotency-Key"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["SaveWorkflowRequest"];
            };
        };
        responses: {
            /** @description Saved (or, replayed, saved earlier with this Idempotency-Key). */
            201: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    /** @description The workflow's URL. */
                    location?: string;
                    /** @description Always `no-store`. */
                    "cache-control"?: string;
                    /** @description The version, quoted (`"1"`): send it as `If-Match` to replace or delete only this version. */
                    etag?: string;
                    /** @description `true` when this is the stored answer of an earlier request with the same Idempotency-Key and body. */
                    "idempotent-replayed"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Workflow"];
                };
            };
            /** @description Invalid request. */
            400: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, revoked or unknown API key. */
            401: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "www-authenticate": components["headers"]["WwwAuthenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope this endpoint needs. */
            403: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The request body is larger than the server accepts (`invalid_request`). */
            413: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The request body is not `application/json` (`invalid_request`). */
            415: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The `Idempotency-Key` was already used with a different request (`idempotency_conflict`). */
            422: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limited (`rate_limited`, with `retry-after`) or budget exhausted (`insufficient_quota`). */
            429: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency (such as the rate limiter) is briefly unavailable; retry with backoff. */
            503: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getWorkflow: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The workflow. */
            200: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    /** @description The version, quoted (`"3"`). */
                    etag?: string;
                    /** @description Always `no-store`. */
                    "cache-control"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Workflow"];
                };
            };
            /** @description Invalid request. */
            400: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, revoked or unknown API key. */
            401: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "www-authenticate": components["headers"]["WwwAuthenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope this endpoint needs. */
            403: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found, or not owned by the caller. */
            404: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limited (`rate_limited`, with `retry-after`) or budget exhausted (`insufficient_quota`). */
            429: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency (such as the rate limiter) is briefly unavailable; retry with backoff. */
            503: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    replaceWorkflow: {
        parameters: {
            query?: never;
            header?: {
                /** @description Save only over this version: the `ETag` you read (e.g. `"3"`), or several, comma-separated. Another version → 412 `precondition_failed`, nothing written. `*` (or no header) saves over any version: the last write wins. A weak tag (`W/"3"`) never matches. */
                "If-Match"?: string;
            };
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["SaveWorkflowRequest"];
            };
        };
        responses: {
            /** @description Saved: the workflow as stored, its new version. */
            200: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    /** @description The new version, quoted. */
                    etag?: string;
                    /** @description Always `no-store`. */
                    "cache-control"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Workflow"];
                };
            };
            /** @description Invalid request. */
            400: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, revoked or unknown API key. */
            401: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "www-authenticate": components["headers"]["WwwAuthenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope this endpoint needs. */
            403: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found, or not owned by the caller. */
            404: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Precondition failed: `If-Match` names another version (`precondition_failed`). */
            412: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The request body is larger than the server accepts (`invalid_request`). */
            413: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The request body is not `application/json` (`invalid_request`). */
            415: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limited (`rate_limited`, with `retry-after`) or budget exhausted (`insufficient_quota`). */
            429: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency (such as the rate limiter) is briefly unavailable; retry with backoff. */
            503: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    deleteWorkflow: {
        parameters: {
            query?: never;
            header?: {
                /** @description Save only over this version: the `ETag` you read (e.g. `"3"`), or several, comma-separated. Another version → 412 `precondition_failed`, nothing written. `*` (or no header) saves over any version: the last write wins. A weak tag (`W/"3"`) never matches. */
                "If-Match"?: string;
            };
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Deleted. */
            204: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Invalid request. */
            400: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, revoked or unknown API key. */
            401: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "www-authenticate": components["headers"]["WwwAuthenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope this endpoint needs. */
            403: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found, or not owned by the caller. */
            404: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Precondition failed: `If-Match` names another version (`precondition_failed`). */
            412: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limited (`rate_limited`, with `retry-after`) or budget exhausted (`insufficient_quota`). */
            429: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency (such as the rate limiter) is briefly unavailable; retry with backoff. */
            503: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    listWorkflowRuns: {
        parameters: {
            query?: {
                limit?: number;
                offset?: number;
            };
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of runs. */
            200: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    /** @description Always `no-store`. */
                    "cache-control"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WorkflowRunList"];
                };
            };
            /** @description Invalid request. */
            400: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, revoked or unknown API key. */
            401: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "www-authenticate": components["headers"]["WwwAuthenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope this endpoint needs. */
            403: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found, or not owned by the caller. */
            404: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limited (`rate_limited`, with `retry-after`) or budget exhausted (`insufficient_quota`). */
            429: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency (such as the rate limiter) is briefly unavailable; retry with backoff. */
            503: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    runWorkflow: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1 to 255 printable ASCII characters (0x20–0x7E), unique per request you mean to make once, e.g. a UUID. The first accepted request with a key is kept for KILN_IDEMPOTENCY_TTL_SECONDS (default 24 h) per account and operation; a repeat with the same key and body answers the same id (header `idempotent-replayed: true`) and starts nothing new; another body with that key is a 422 `idempotency_conflict`. Refused requests (400, 401, 402, 403, 429, 503) are not kept: retry them with the same key. */
                "Idempotency-Key"?: string;
            };
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": components["schemas"]["RunRequest"];
            };
        };
        responses: {
            /** @description Accepted; the run is pending (or, replayed, was accepted earlier with this Idempotency-Key). */
            202: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    /** @description The run's URL (`GET /workflows/{id}/runs/{runId}`). */
                    location?: string;
                    /** @description Always `no-store`. */
                    "cache-control"?: string;
                    /** @description `true` when this is the stored answer of an earlier request with the same Idempotency-Key. */
                    "idempotent-replayed"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RunAccepted"];
                };
            };
            /** @description Invalid request. */
            400: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, revoked or unknown API key. */
            401: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "www-authenticate": components["headers"]["WwwAuthenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key bills to a workspace that cannot be charged. */
            402: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope this endpoint needs. */
            403: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found, or not owned by the caller. */
            404: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The request body is larger than the server accepts (`invalid_request`). */
            413: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The request body is not `application/json` (`invalid_request`). */
            415: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limited (`rate_limited`, with `retry-after`) or budget exhausted (`insufficient_quota`). */
            429: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unexpected error. */
            500: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency (such as the rate limiter) is briefly unavailable; retry with backoff. */
            503: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getWorkflowRun: {
        parameters: {
            query?: never;
            header?: {
                /** @description `wait=N` (RFC 7240), 1 ≤ N ≤ 60: wait up to N seconds for the job or run to settle before answering. Other preferences are ignored, and so is a `wait` outside 1–60 (the request is answered as without it). When honoured, the response carries `preference-applied: wait=N`. */
                Prefer?: string;
            };
            path: {
                id: string;
                runId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The run. */
            200: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    /** @description Always `no-store`. */
                    "cache-control"?: string;
                    /** @description When `Prefer: wait=N` was honoured: `wait=N`. */
                    "preference-applied"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WorkflowRun"];
                };
            };
            /** @description Invalid request. */
            400: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, revoked or unknown API key. */
            401: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "www-authenticate": components["headers"]["WwwAuthenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope this endpoint needs. */
            403: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found, or not owned by the caller. */
            404: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limited (`rate_limited`, with `retry-after`) or budget exhausted (`insufficient_quota`). */
            429: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency (such as the rate limiter) is briefly unavailable; retry with backoff. */
            503: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    streamWorkflowRunEvents: {
        parameters: {
            query?: never;
            header?: {
                /** @description The `id` of the last event received, to resume a stream after a disconnect: events up to it are not sent again. Not a whole number: the stream starts over. */
                "Last-Event-ID"?: string;
            };
            path: {
                id: string;
                runId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The event stream. */
            200: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "text/event-stream": components["schemas"]["WorkflowRunStreamItem"];
                };
            };
            /** @description Invalid request. */
            400: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, revoked or unknown API key. */
            401: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "www-authenticate": components["headers"]["WwwAuthenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope this endpoint needs. */
            403: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found, or not owned by the caller. */
            404: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limited (`rate_limited`, with `retry-after`) or budget exhausted (`insufficient_quota`). */
            429: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency (such as the rate limiter) is briefly unavailable; retry with backoff. */
            503: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getWorkflowRunGraph: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
                runId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The run's graph. */
            200: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    /** @description `private, max-age=3600`: a snapshot is immutable. */
                    "cache-control"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WorkflowRunGraph"];
                };
            };
            /** @description Invalid request. */
            400: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, revoked or unknown API key. */
            401: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "www-authenticate": components["headers"]["WwwAuthenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope this endpoint needs. */
            403: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found, or not owned by the caller. */
            404: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limited (`rate_limited`, with `retry-after`) or budget exhausted (`insufficient_quota`). */
            429: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency (such as the rate limiter) is briefly unavailable; retry with backoff. */
            503: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    cancelWorkflowRun: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
                runId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The canceled run. */
            200: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    /** @description Always `no-store`. */
                    "cache-control"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WorkflowRun"];
                };
            };
            /** @description Invalid request. */
            400: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, revoked or unknown API key. */
            401: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "www-authenticate": components["headers"]["WwwAuthenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope this endpoint needs. */
            403: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found, or not owned by the caller. */
            404: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict: the resource is not in a state that allows this (`conflict`), e.g. the job already ended. */
            409: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limited (`rate_limited`, with `retry-after`) or budget exhausted (`insufficient_quota`). */
            429: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency (such as the rate limiter) is briefly unavailable; retry with backoff. */
            503: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    retryWorkflowRun: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
                runId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Accepted; the new run is pending. */
            202: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    /** @description The new run's URL (`GET /workflows/{id}/runs/{runId}`). */
                    location?: string;
                    /** @description Always `no-store`. */
                    "cache-control"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RunAccepted"];
                };
            };
            /** @description Invalid request. */
            400: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, revoked or unknown API key. */
            401: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "www-authenticate": components["headers"]["WwwAuthenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key bills to a workspace that cannot be charged. */
            402: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope this endpoint needs. */
            403: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found, or not owned by the caller. */
            404: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict: the resource is not in a state that allows this (`conflict`), e.g. the job already ended. */
            409: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limited (`rate_limited`, with `retry-after`) or budget exhausted (`insufficient_quota`). */
            429: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unexpected error. */
            500: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency (such as the rate limiter) is briefly unavailable; retry with backoff. */
            503: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    listWebhooks: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The endpoints. */
            200: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    /** @description Always `no-store`. */
                    "cache-control"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookEndpointList"];
                };
            };
            /** @description Missing, malformed, revoked or unknown API key. */
            401: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "www-authenticate": components["headers"]["WwwAuthenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope this endpoint needs. */
            403: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limited (`rate_limited`, with `retry-after`) or budget exhausted (`insufficient_quota`). */
            429: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency (such as the rate limiter) is briefly unavailable; retry with backoff. */
            503: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    createWebhook: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description Where deliveries are POSTed: https, a public host, no credentials. */
                    url: string;
                    /** @description Event types to receive: `generation.completed`, `generation.failed`, `workflow_run.completed`, `workflow_run.failed`, `budget.threshold`, `webhook.test`, `workflow.saved`, `workflow.deleted`, `batch.completed`, `batch.canceled`, `batch.expired`. Omitted: every type. */
                    events?: ("generation.completed" | "generation.failed" | "workflow_run.completed" | "workflow_run.failed" | "budget.threshold" | "webhook.test" | "workflow.saved" | "workflow.deleted" | "batch.completed" | "batch.canceled" | "batch.expired")[];
                    description?: string | null;
                };
            };
        };
        responses: {
            /** @description The endpoint, with its signing secret. */
            201: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    /** @description Always `no-store`. */
                    "cache-control"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookEndpointWithSecret"];
                };
            };
            /** @description Invalid request. */
            400: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, revoked or unknown API key. */
            401: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "www-authenticate": components["headers"]["WwwAuthenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope this endpoint needs. */
            403: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The request body is larger than the server accepts (`invalid_request`). */
            413: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The request body is not `application/json` (`invalid_request`). */
            415: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limited (`rate_limited`, with `retry-after`) or budget exhausted (`insufficient_quota`). */
            429: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency (such as the rate limiter) is briefly unavailable; retry with backoff. */
            503: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getWebhook: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The endpoint. */
            200: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    /** @description Always `no-store`. */
                    "cache-control"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookEndpoint"];
                };
            };
            /** @description Invalid request. */
            400: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, revoked or unknown API key. */
            401: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "www-authenticate": components["headers"]["WwwAuthenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope this endpoint needs. */
            403: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found, or not owned by the caller. */
            404: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limited (`rate_limited`, with `retry-after`) or budget exhausted (`insufficient_quota`). */
            429: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency (such as the rate limiter) is briefly unavailable; retry with backoff. */
            503: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    deleteWebhook: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Deleted. */
            204: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Invalid request. */
            400: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, revoked or unknown API key. */
            401: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "www-authenticate": components["headers"]["WwwAuthenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope this endpoint needs. */
            403: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found, or not owned by the caller. */
            404: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limited (`rate_limited`, with `retry-after`) or budget exhausted (`insufficient_quota`). */
            429: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency (such as the rate limiter) is briefly unavailable; retry with backoff. */
            503: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    updateWebhook: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description Where deliveries are POSTed: https, a public host, no credentials. */
                    url?: string;
                    events?: ("generation.completed" | "generation.failed" | "workflow_run.completed" | "workflow_run.failed" | "budget.threshold" | "webhook.test" | "workflow.saved" | "workflow.deleted" | "batch.completed" | "batch.canceled" | "batch.expired")[] | null;
                    description?: string | null;
                    /** @description `true` enables a disabled endpoint again (and clears its failing streak). */
                    enabled?: boolean;
                };
            };
        };
        responses: {
            /** @description The endpoint as updated. */
            200: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    /** @description Always `no-store`. */
                    "cache-control"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookEndpoint"];
                };
            };
            /** @description Invalid request. */
            400: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, revoked or unknown API key. */
            401: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "www-authenticate": components["headers"]["WwwAuthenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope this endpoint needs. */
            403: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found, or not owned by the caller. */
            404: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The request body is larger than the server accepts (`invalid_request`). */
            413: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The request body is not `application/json` (`invalid_request`). */
            415: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limited (`rate_limited`, with `retry-after`) or budget exhausted (`insufficient_quota`). */
            429: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency (such as the rate limiter) is briefly unavailable; retry with backoff. */
            503: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    rotateWebhookSecret: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The new secret. */
            200: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    /** @description Always `no-store`. */
                    "cache-control"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookSecret"];
                };
            };
            /** @description Invalid request. */
            400: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, revoked or unknown API key. */
            401: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "www-authenticate": components["headers"]["WwwAuthenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope this endpoint needs. */
            403: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found, or not owned by the caller. */
            404: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limited (`rate_limited`, with `retry-after`) or budget exhausted (`insufficient_quota`). */
            429: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency (such as the rate limiter) is briefly unavailable; retry with backoff. */
            503: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    listWebhookDeliveries: {
        parameters: {
            query?: {
                limit?: number;
                cursor?: string;
            };
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of deliveries. */
            200: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    /** @description Always `no-store`. */
                    "cache-control"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookDeliveryList"];
                };
            };
            /** @description Invalid request. */
            400: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, revoked or unknown API key. */
            401: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "www-authenticate": components["headers"]["WwwAuthenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope this endpoint needs. */
            403: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found, or not owned by the caller. */
            404: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limited (`rate_limited`, with `retry-after`) or budget exhausted (`insufficient_quota`). */
            429: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency (such as the rate limiter) is briefly unavailable; retry with backoff. */
            503: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    redeliverWebhook: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
                deliveryId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Queued. */
            202: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        accepted: true;
                    };
                };
            };
            /** @description Invalid request. */
            400: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, revoked or unknown API key. */
            401: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "www-authenticate": components["headers"]["WwwAuthenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope this endpoint needs. */
            403: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found, or not owned by the caller. */
            404: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limited (`rate_limited`, with `retry-after`) or budget exhausted (`insufficient_quota`). */
            429: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency (such as the rate limiter) is briefly unavailable; retry with backoff. */
            503: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    recoverWebhook: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /**
                     * Format: date-time
                     * @description Deliveries that failed at or after this time are sent again.
                     */
                    since: string;
                };
            };
        };
        responses: {
            /** @description Queued. */
            202: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        accepted: true;
                        /** @description Deliveries queued again. */
                        count: number;
                    };
                };
            };
            /** @description Invalid request. */
            400: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, revoked or unknown API key. */
            401: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "www-authenticate": components["headers"]["WwwAuthenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope this endpoint needs. */
            403: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found, or not owned by the caller. */
            404: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The request body is larger than the server accepts (`invalid_request`). */
            413: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The request body is not `application/json` (`invalid_request`). */
            415: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limited (`rate_limited`, with `retry-after`) or budget exhausted (`insufficient_quota`). */
            429: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency (such as the rate limiter) is briefly unavailable; retry with backoff. */
            503: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    testWebhook: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Queued. */
            202: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        accepted: true;
                    };
                };
            };
            /** @description Invalid request. */
            400: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, revoked or unknown API key. */
            401: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "www-authenticate": components["headers"]["WwwAuthenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope this endpoint needs. */
            403: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found, or not owned by the caller. */
            404: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict: the resource is not in a state that allows this (`conflict`), e.g. the job already ended. */
            409: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limited (`rate_limited`, with `retry-after`) or budget exhausted (`insufficient_quota`). */
            429: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency (such as the rate limiter) is briefly unavailable; retry with backoff. */
            503: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    streamEvents: {
        parameters: {
            query?: never;
            header?: {
                /** @description The `id` of the last event received (`<tx>-<n>`): the stream resumes after it. Anything else starts from now. */
                "Last-Event-ID"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The event stream. */
            200: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "text/event-stream": components["schemas"]["EventStreamItem"];
                };
            };
            /** @description Missing, malformed, revoked or unknown API key. */
            401: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "www-authenticate": components["headers"]["WwwAuthenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope this endpoint needs. */
            403: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limited (`rate_limited`, with `retry-after`) or budget exhausted (`insufficient_quota`). */
            429: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency (such as the rate limiter) is briefly unavailable; retry with backoff. */
            503: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    listKeys: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The keys. */
            200: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    /** @description Always `no-store`. */
                    "cache-control"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["KeyList"];
                };
            };
            /** @description Missing, malformed, revoked or unknown API key. */
            401: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "www-authenticate": components["headers"]["WwwAuthenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope this endpoint needs. */
            403: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limited (`rate_limited`, with `retry-after`) or budget exhausted (`insufficient_quota`). */
            429: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency (such as the rate limiter) is briefly unavailable; retry with backoff. */
            503: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    createKey: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description What the key is for. */
                    name: string;
                    /** @description Any of `read`, `write` (implies read), `keys` (manage this scope's keys, read its audit log) and `admin` (admins only). Never more than the creator's own. */
                    scopes: ("read" | "write" | "keys" | "admin")[];
                    rpm?: number | null;
                    budgetMicros?: number | null;
                    expiresAt?: string | null;
                    /** @description Every request of this key that spends (`POST /generations`, runs, batch lines) must name an `endUser`, else 400 `invalid_request` (docs: Attribution). Default false. */
                    requireEndUser?: boolean;
                };
            };
        };
        responses: {
            /** @description The key, with its secret. */
            201: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    /** @description Always `no-store`. */
                    "cache-control"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["KeyWithSecret"];
                };
            };
            /** @description Invalid request. */
            400: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, revoked or unknown API key. */
            401: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "www-authenticate": components["headers"]["WwwAuthenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope this endpoint needs. */
            403: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The request body is larger than the server accepts (`invalid_request`). */
            413: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The request body is not `application/json` (`invalid_request`). */
            415: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limited (`rate_limited`, with `retry-after`) or budget exhausted (`insufficient_quota`). */
            429: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency (such as the rate limiter) is briefly unavailable; retry with backoff. */
            503: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    rotateKey: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": {
                    /** @description How long the previous secret keeps working (0 to 7 days; default 86400, a day). Then it gets the same 401 as an unknown key. Any older secret still in the grace of an earlier rotation ends at once. */
                    graceSeconds?: number;
                };
            };
        };
        responses: {
            /** @description The key, with its new secret. */
            201: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    /** @description Always `no-store`. */
                    "cache-control"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["KeyWithSecret"];
                };
            };
            /** @description Invalid request. */
            400: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, revoked or unknown API key. */
            401: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "www-authenticate": components["headers"]["WwwAuthenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope this endpoint needs. */
            403: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found, or not owned by the caller. */
            404: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict: the resource is not in a state that allows this (`conflict`), e.g. the job already ended. */
            409: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The request body is larger than the server accepts (`invalid_request`). */
            413: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The request body is not `application/json` (`invalid_request`). */
            415: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limited (`rate_limited`, with `retry-after`) or budget exhausted (`insufficient_quota`). */
            429: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency (such as the rate limiter) is briefly unavailable; retry with backoff. */
            503: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getKey: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The key. */
            200: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Key"];
                };
            };
            /** @description Invalid request. */
            400: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, revoked or unknown API key. */
            401: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "www-authenticate": components["headers"]["WwwAuthenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope this endpoint needs. */
            403: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found, or not owned by the caller. */
            404: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limited (`rate_limited`, with `retry-after`) or budget exhausted (`insufficient_quota`). */
            429: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency (such as the rate limiter) is briefly unavailable; retry with backoff. */
            503: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    revokeKey: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The revoked key. */
            200: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    /** @description Always `no-store`. */
                    "cache-control"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Key"];
                };
            };
            /** @description Invalid request. */
            400: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, revoked or unknown API key. */
            401: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "www-authenticate": components["headers"]["WwwAuthenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope this endpoint needs. */
            403: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found, or not owned by the caller. */
            404: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limited (`rate_limited`, with `retry-after`) or budget exhausted (`insufficient_quota`). */
            429: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency (such as the rate limiter) is briefly unavailable; retry with backoff. */
            503: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    listAudit: {
        parameters: {
            query?: {
                limit?: number;
                cursor?: string;
                action?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of entries. */
            200: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    /** @description Always `no-store`. */
                    "cache-control"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AuditPage"];
                };
            };
            /** @description Invalid request. */
            400: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, revoked or unknown API key. */
            401: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "www-authenticate": components["headers"]["WwwAuthenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope this endpoint needs. */
            403: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limited (`rate_limited`, with `retry-after`) or budget exhausted (`insufficient_quota`). */
            429: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency (such as the rate limiter) is briefly unavailable; retry with backoff. */
            503: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getEndUserBudget: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                endUser: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The end user's cap and use. */
            200: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    /** @description Always `no-store`. */
                    "cache-control"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EndUserBudget"];
                };
            };
            /** @description Invalid request. */
            400: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, revoked or unknown API key. */
            401: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "www-authenticate": components["headers"]["WwwAuthenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope this endpoint needs. */
            403: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limited (`rate_limited`, with `retry-after`) or budget exhausted (`insufficient_quota`). */
            429: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency (such as the rate limiter) is briefly unavailable; retry with backoff. */
            503: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    setEndUserBudget: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                endUser: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["SetEndUserBudgetRequest"];
            };
        };
        responses: {
            /** @description The end user's cap and use, as `GET` shows them. */
            200: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    /** @description Always `no-store`. */
                    "cache-control"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EndUserBudget"];
                };
            };
            /** @description Invalid request. */
            400: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, revoked or unknown API key. */
            401: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "www-authenticate": components["headers"]["WwwAuthenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope this endpoint needs. */
            403: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The request body is larger than the server accepts (`invalid_request`). */
            413: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The request body is not `application/json` (`invalid_request`). */
            415: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limited (`rate_limited`, with `retry-after`) or budget exhausted (`insufficient_quota`). */
            429: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency (such as the rate limiter) is briefly unavailable; retry with backoff. */
            503: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    removeEndUserBudget: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                endUser: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Removed. */
            204: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    /** @description Always `no-store`. */
                    "cache-control"?: string;
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Invalid request. */
            400: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, revoked or unknown API key. */
            401: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "www-authenticate": components["headers"]["WwwAuthenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope this endpoint needs. */
            403: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found, or not owned by the caller. */
            404: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limited (`rate_limited`, with `retry-after`) or budget exhausted (`insufficient_quota`). */
            429: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency (such as the rate limiter) is briefly unavailable; retry with backoff. */
            503: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getMe: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The caller. */
            200: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    /** @description Always `no-store`. */
                    "cache-control"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Me"];
                };
            };
            /** @description Missing, malformed, revoked or unknown API key. */
            401: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "www-authenticate": components["headers"]["WwwAuthenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope this endpoint needs. */
            403: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limited (`rate_limited`, with `retry-after`) or budget exhausted (`insufficient_quota`). */
            429: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency (such as the rate limiter) is briefly unavailable; retry with backoff. */
            503: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getSession: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The session. */
            200: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    /** @description Always `no-store`. */
                    "cache-control"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Session"];
                };
            };
            /** @description Missing, malformed, revoked or unknown API key. */
            401: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "www-authenticate": components["headers"]["WwwAuthenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found, or not owned by the caller. */
            404: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limited (`rate_limited`, with `retry-after`) or budget exhausted (`insufficient_quota`). */
            429: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency (such as the rate limiter) is briefly unavailable; retry with backoff. */
            503: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    switchSessionWorkspace: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["SwitchWorkspaceRequest"];
            };
        };
        responses: {
            /** @description The session, acting in the workspace. */
            200: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    /** @description Always `no-store`. */
                    "cache-control"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Session"];
                };
            };
            /** @description Invalid request. */
            400: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, revoked or unknown API key. */
            401: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "www-authenticate": components["headers"]["WwwAuthenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope this endpoint needs. */
            403: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found, or not owned by the caller. */
            404: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The request body is larger than the server accepts (`invalid_request`). */
            413: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The request body is not `application/json` (`invalid_request`). */
            415: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limited (`rate_limited`, with `retry-after`) or budget exhausted (`insufficient_quota`). */
            429: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency (such as the rate limiter) is briefly unavailable; retry with backoff. */
            503: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    adminListAccounts: {
        parameters: {
            query?: {
                limit?: number;
                cursor?: string;
                q?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of accounts. */
            200: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    /** @description Always `no-store`. */
                    "cache-control"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AdminAccountPage"];
                };
            };
            /** @description Invalid request. */
            400: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, revoked or unknown API key. */
            401: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "www-authenticate": components["headers"]["WwwAuthenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope this endpoint needs. */
            403: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limited (`rate_limited`, with `retry-after`) or budget exhausted (`insufficient_quota`). */
            429: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency (such as the rate limiter) is briefly unavailable; retry with backoff. */
            503: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    adminGetAccount: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The account. */
            200: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    /** @description Always `no-store`. */
                    "cache-control"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AdminAccountDetail"];
                };
            };
            /** @description Invalid request. */
            400: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, revoked or unknown API key. */
            401: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "www-authenticate": components["headers"]["WwwAuthenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope this endpoint needs. */
            403: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found, or not owned by the caller. */
            404: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limited (`rate_limited`, with `retry-after`) or budget exhausted (`insufficient_quota`). */
            429: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency (such as the rate limiter) is briefly unavailable; retry with backoff. */
            503: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    adminUpdateAccount: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /**
                     * @description `blocked` stops new generations.
                     * @enum {string}
                     */
                    tier?: "legacy_free" | "pro" | "enterprise" | "blocked";
                    budgetMicros?: number | null;
                };
            };
        };
        responses: {
            /** @description The account as updated. */
            200: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    /** @description Always `no-store`. */
                    "cache-control"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AdminAccountDetail"];
                };
            };
            /** @description Invalid request. */
            400: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, revoked or unknown API key. */
            401: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "www-authenticate": components["headers"]["WwwAuthenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope this endpoint needs. */
            403: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found, or not owned by the caller. */
            404: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The request body is larger than the server accepts (`invalid_request`). */
            413: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The request body is not `application/json` (`invalid_request`). */
            415: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limited (`rate_limited`, with `retry-after`) or budget exhausted (`insufficient_quota`). */
            429: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency (such as the rate limiter) is briefly unavailable; retry with backoff. */
            503: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    adminRevokeAccountKeys: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description How many keys were revoked, and the account. */
            200: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    /** @description Always `no-store`. */
                    "cache-control"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RevokeKeysResult"];
                };
            };
            /** @description Invalid request. */
            400: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, revoked or unknown API key. */
            401: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "www-authenticate": components["headers"]["WwwAuthenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope this endpoint needs. */
            403: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found, or not owned by the caller. */
            404: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limited (`rate_limited`, with `retry-after`) or budget exhausted (`insufficient_quota`). */
            429: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency (such as the rate limiter) is briefly unavailable; retry with backoff. */
            503: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    adminListWorkspaces: {
        parameters: {
            query?: {
                limit?: number;
                cursor?: string;
                q?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of workspaces. */
            200: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    /** @description Always `no-store`. */
                    "cache-control"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AdminWorkspacePage"];
                };
            };
            /** @description Invalid request. */
            400: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, revoked or unknown API key. */
            401: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "www-authenticate": components["headers"]["WwwAuthenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope this endpoint needs. */
            403: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limited (`rate_limited`, with `retry-after`) or budget exhausted (`insufficient_quota`). */
            429: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency (such as the rate limiter) is briefly unavailable; retry with backoff. */
            503: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    adminGetWorkspace: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The workspace. */
            200: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    /** @description Always `no-store`. */
                    "cache-control"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AdminWorkspaceDetail"];
                };
            };
            /** @description Invalid request. */
            400: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, revoked or unknown API key. */
            401: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "www-authenticate": components["headers"]["WwwAuthenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope this endpoint needs. */
            403: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found, or not owned by the caller. */
            404: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limited (`rate_limited`, with `retry-after`) or budget exhausted (`insufficient_quota`). */
            429: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency (such as the rate limiter) is briefly unavailable; retry with backoff. */
            503: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    adminListModels: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The catalog. */
            200: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    /** @description Always `no-store`. */
                    "cache-control"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AdminModelList"];
                };
            };
            /** @description Missing, malformed, revoked or unknown API key. */
            401: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "www-authenticate": components["headers"]["WwwAuthenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope this endpoint needs. */
            403: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limited (`rate_limited`, with `retry-after`) or budget exhausted (`insufficient_quota`). */
            429: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency (such as the rate limiter) is briefly unavailable; retry with backoff. */
            503: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    adminUpdateModel: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description false: new generations with this model are refused (400) and GET /models stops listing it. */
                    enabled: boolean;
                };
            };
        };
        responses: {
            /** @description The entry as updated. */
            200: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    /** @description Always `no-store`. */
                    "cache-control"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AdminModel"];
                };
            };
            /** @description Invalid request. */
            400: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, revoked or unknown API key. */
            401: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "www-authenticate": components["headers"]["WwwAuthenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope this endpoint needs. */
            403: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found, or not owned by the caller. */
            404: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The request body is larger than the server accepts (`invalid_request`). */
            413: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The request body is not `application/json` (`invalid_request`). */
            415: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limited (`rate_limited`, with `retry-after`) or budget exhausted (`insufficient_quota`). */
            429: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency (such as the rate limiter) is briefly unavailable; retry with backoff. */
            503: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    adminHealth: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The health figures, read now. */
            200: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    /** @description Always `no-store`. */
                    "cache-control"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AdminHealth"];
                };
            };
            /** @description Missing, malformed, revoked or unknown API key. */
            401: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "www-authenticate": components["headers"]["WwwAuthenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope this endpoint needs. */
            403: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limited (`rate_limited`, with `retry-after`) or budget exhausted (`insufficient_quota`). */
            429: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency (such as the rate limiter) is briefly unavailable; retry with backoff. */
            503: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    "retry-after": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getOpenApi: {
        parameters: {
            query?: never;
            header?: {
                /** @description `ETag`s already held: 304 when one is the current version. */
                "If-None-Match"?: string;
                /** @description Answer only if the document is still this version (`ETag`), else 412. */
                "If-Match"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OpenAPI 3.1.0 document. */
            200: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    /** @description The document's version (a strong entity tag). */
                    etag?: string;
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Not modified: `If-None-Match` names the current version. */
            304: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    /** @description The document's version. */
                    etag?: string;
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Precondition failed: `If-Match` names another version (`precondition_failed`). */
            412: {
                headers: {
                    "x-request-id": components["headers"]["RequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
}

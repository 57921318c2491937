// Generation request and response schemas (the OpenAPI `GenerationRequest` and `GenerationStatus`):
// the single source for REST validation, the OpenAPI document and MCP tool arguments.

import * as v from 'valibot';
import { ASPECT_RATIOS, MAX_IMAGES, TARGET_LANGUAGES } from '../providers/types.ts';
import { registerSchemas, Uuid } from '../schemas.ts';
import { EndUser, Metadata } from './attribution.ts';

export const MAX_PROMPT_CHARS = 50_000;
export const MAX_TEXT_INPUTS = 10;
export const MAX_TEXT_INPUT_CHARS = 50_000;

/** Length in characters (Unicode code points), not UTF-16 units. */
const chars = (s: string) => {
  let n = 0;
  for (const _ of s) n++;
  return n;
};

const text = (min: number, max: number) =>
  v.pipe(
    v.string('must be a string'),
    v.check((s) => {
      const n = s.length > max * 2 ? Infinity : chars(s);
      return n >= min && n <= max;
    }, min > 0 ? `must be ${min} to ${max.toLocaleString('en-US')} characters` : `must be at most ${max.toLocaleString('en-US')} characters`),
  );

function imageUrl(s: string): boolean {
  if (/^data:/i.test(s)) return s.indexOf(',') > 5;
  if (!/^https:\/\//i.test(s)) return false;
  try {
    const u = new URL(s);
    return u.protocol === 'https:' && u.hostname !== '' && !u.username && !u.password;
  } catch {
    return false;
  }
}

export const ImageInput = v.object(
  {
  url: v.pipe(
    v.string('must be a string'),
    v.maxLength(16 * 1024 * 1024, 'is too long'),
    v.check(imageUrl, 'must be an https:// URL or a data: URI'),
    v.description('An `https://` URL or a `data:` URI.'),
  ),
  mediaType: v.optional(
    v.pipe(
      v.string('must be a string'),
      v.regex(/^image\/[a-z0-9.+-]{1,100}$/i, 'must be an image MIME type such as image/png'),
      v.description('MIME type. Default `image/png`.'),
    ),
  ),
  },
  'must be an object',
);

export const TextInput = v.object({
  content: v.pipe(text(0, MAX_TEXT_INPUT_CHARS), v.description('At most 50,000 characters.')),
  label: v.optional(v.pipe(v.string('must be a string'), v.maxLength(200, 'must be at most 200 characters'), v.description('Defaults to `Input N`.'))),
  language: v.optional(v.pipe(v.string('must be a string'), v.maxLength(50, 'must be at most 50 characters'), v.description('Language hint for code inputs.'))),
}, 'must be an object');

export const GenerationRequest = v.object({
  type: v.pipe(v.picklist(['image', 'code'], 'must be "image" or "code"'), v.description('Must be compatible with the model\'s category.')),
  prompt: v.pipe(text(1, MAX_PROMPT_CHARS), v.description('1 to 50,000 characters.')),
  model: v.optional(
    v.pipe(
      v.string('must be a string'),
      v.minLength(1, 'must not be empty'),
      v.maxLength(200, 'is not in the catalog'),
      v.description('A model id from `GET /models`. Defaults to the default image model for `image` and the default code model for `code`.'),
    ),
  ),
  images: v.optional(v.pipe(v.array(ImageInput, 'must be an array'), v.maxLength(MAX_IMAGES, `must have at most ${MAX_IMAGES} items`))),
  textInputs: v.optional(
    v.pipe(v.array(TextInput, 'must be an array'), v.maxLength(MAX_TEXT_INPUTS, `must have at most ${MAX_TEXT_INPUTS} items`)),
  ),
  aspectRatio: v.optional(
    v.pipe(v.picklist(ASPECT_RATIOS, `must be one of ${ASPECT_RATIOS.join(', ')}`), v.description('For images. Default `1:1`.')),
  ),
  targetLanguage: v.optional(
    v.pipe(
      v.picklist(TARGET_LANGUAGES, `must be one of ${TARGET_LANGUAGES.join(', ')}`),
      v.description('For code. Default `text` (`svg` for SVG models). `glsl` produces a Shadertoy-style fragment shader with 3–5 annotated uniforms.'),
    ),
  ),
  screenHtml: v.optional(v.pipe(v.boolean('must be a boolean'), v.description('For code. Render a full HTML screen. Default false.'))),
  endUser: v.optional(EndUser),
  metadata: v.optional(Metadata),
}, 'The request body must be a JSON object.');
export type GenerationRequestInput = v.InferInput<typeof GenerationRequest>;
export type GenerationRequestValue = v.InferOutput<typeof GenerationRequest>;

export const GenerationAccepted = v.object({
  id: v.pipe(Uuid, v.description('Job id.')),
  status: v.pipe(v.literal('pending'), v.description('Always `pending`.')),
});

const costMicros = v.pipe(v.number(), v.description('Billed cost in microdollars.'));
const producedBy = v.optional(
  v.pipe(v.string(), v.description('The catalog entry that produced the output and was billed: the requested model, or one of its fallbacks when its upstream was down. Absent on outputs made before fallbacks existed.')),
);

export const ImageResult = v.object({
  type: v.literal('image'),
  url: v.pipe(v.nullable(v.string()), v.description('Signed, expiring URL of the generated image; null once the image expired (see `expiredAt`).')),
  mediaType: v.pipe(v.nullable(v.string()), v.description('MIME type.')),
  aspectRatio: v.string(),
  costMicros,
  model: producedBy,
  expiredAt: v.optional(
    v.pipe(v.string(), v.description('When the image was removed under the service\'s retention period (KILN_RETENTION); the record, status and cost stay. Absent while the image is kept.')),
  ),
});

export const CodeResult = v.object({
  type: v.literal('code'),
  code: v.pipe(v.nullable(v.string()), v.description('Generated text.')),
  structuredOutput: v.pipe(
    v.any(),
    v.description('The parsed value when the output is JSON; for `glsl`, `{ uniforms: [...] }` parsed from the annotations; null otherwise.'),
  ),
  costMicros,
  model: producedBy,
});

export const GenerationStatus = v.object({
  id: Uuid,
  status: v.picklist(['pending', 'processing', 'completed', 'failed']),
  result: v.pipe(v.nullable(v.union([ImageResult, CodeResult])), v.description('Null until `status` is `completed`.')),
  error: v.pipe(v.nullable(v.string()), v.description('Failure message when `status` is `failed`; otherwise null.')),
  prompt: v.optional(
    v.pipe(v.string(), v.description('The request\'s prompt, as it was sent. Absent only from events recorded before the field existed.')),
  ),
  batchId: v.optional(v.pipe(v.string(), v.description('A batch line: the batch it belongs to (`POST /batches`).'))),
  customId: v.optional(v.pipe(v.string(), v.description('A batch line: its `custom_id`.'))),
  endUser: v.optional(v.pipe(v.string(), v.description('The request\'s `endUser` (a run output: its run\'s), when it had one (docs: Attribution).'))),
  metadata: v.optional(v.pipe(v.record(v.string(), v.string()), v.description('The request\'s `metadata` (a run output: its run\'s), when it had any.'))),
  partial: v.optional(v.pipe(
    v.object({
      text: v.optional(v.pipe(v.string(), v.description('Code outputs: the text written so far, as the provider wrote it (code fences included).'))),
      previewUrl: v.optional(v.pipe(v.string(), v.description('Image outputs: a signed URL to the newest partial image.'))),
    }),
    v.description('`GET /generations/{id}` while `processing`, once the provider has written something: what it has written so far. Working data, not the result: it may start over after a retry, and it is gone once the generation ends.'),
  )),
});
export type GenerationStatusBody = v.InferOutput<typeof GenerationStatus>;

registerSchemas({ EndUser, Metadata, GenerationRequest, ImageInput, TextInput, GenerationAccepted, ImageResult, CodeResult, GenerationStatus });

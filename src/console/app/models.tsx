// Models: the catalog this key can use, with billed prices (and the batch price of entries that
// set one) and modalities.

import { Alert, Loading, Section, useLoad } from './ui.tsx';
import { priceParts, pricingParts } from './playground.tsx';
import type { KilnClient } from './api.ts';

/** A catalog category as people write it ("SVG", not "Svg"). */
const CATEGORY: Record<string, string> = { image: 'Image', text: 'Text', svg: 'SVG' };

export function Models({ client }: { client: KilnClient }) {
  const [load] = useLoad((signal) => client.models.list({ signal }), [client]);
  return (
    <Section title="Models" intro="Prices are what Kiln bills (the provider's cost with its markup), in US dollars.">
      {load.state === 'loading' && <Loading what="models" />}
      {load.state === 'error' && <Alert error={load.error} />}
      {load.state === 'ok' && (
        <ul class="models">
          {load.value.data.map((m) => (
            <li key={m.id} class="card model">
              <div class="model-head">
                <div class="min0">
                  <h2 class="card-title">{m.name}</h2>
                  <p><code>{m.id}</code></p>
                </div>
                <span class={`badge cat cat-${m.category}`}>{CATEGORY[m.category] ?? m.category}</span>
              </div>
              <dl class="facts">
                {/* Each price stays whole: a line breaks only between two of them. */}
                <div class="wide"><dt>Price</dt><dd class="price">{priceParts(m).map((p, i) => <>{i > 0 && ' · '}<span class="nowrap">{p}</span></>)}</dd></div>
                {m.batchPrice !== undefined && (
                  <div class="wide"><dt>Batch price</dt><dd class="batch-price">{pricingParts(m.batchPrice).map((p, i) => <>{i > 0 && ' · '}<span class="nowrap">{p}</span></>)}</dd></div>
                )}
                <div><dt>Input</dt><dd>{m.input_modalities.join(', ')}</dd></div>
                <div><dt>Output</dt><dd>{m.output_modalities.join(', ')}</dd></div>
                <div><dt>Provider</dt><dd>{m.provider}{m.provider === 'local' ? ' (offline)' : ''}</dd></div>
              </dl>
            </li>
          ))}
        </ul>
      )}
    </Section>
  );
}

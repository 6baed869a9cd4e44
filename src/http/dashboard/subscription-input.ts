// What the two subscription forms (create and edit) share: the metadata text and the endpoint choices.
import type { EndpointView } from '../../actions/endpoints.ts';

/** The metadata textarea's text: empty → absent; otherwise JSON, kept as typed for byte-exact storage. */
export function parseMetadata(text: string): { value?: unknown; raw?: string; error?: string } {
  if (text.trim() === '') return {};
  try {
    return { value: JSON.parse(text) as unknown, raw: text };
  } catch (err) {
    return { error: `must be valid JSON (${(err as Error).message})` };
  }
}

/** The endpoints a subscription form offers, as select options. */
export function endpointOptions(
  endpoints: EndpointView[],
  placeholder: boolean,
): { value: string; label: string }[] {
  const options = endpoints.map((e) => ({ value: e.id, label: `${e.title} — ${e.url}` }));
  return placeholder ? [{ value: '', label: 'Choose an endpoint…' }, ...options] : options;
}

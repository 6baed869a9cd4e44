// A cookie-keeping form client for the dashboard over app.request(), plus HTML probes the dashboard tests share.
import assert from 'node:assert/strict';
import type { World } from '../../support/world.ts';

export type Page = {
  status: number;
  text: string;
  headers: Headers;
  location: string | null;
  setCookies: string[];
};

/** One browser: a cookie jar, a client address, and the CSRF token of the last page it saw. */
export class Client {
  readonly cookies = new Map<string, string>();
  readonly #world: World;
  readonly #address: string;
  readonly #origin: string;
  readonly #forwardedFor: string | undefined;
  csrf = '';

  /** `address` is the TCP peer; `forwardedFor` an X-Forwarded-For header sent with every request. */
  constructor(
    world: World,
    opts: { address?: string; origin?: string; forwardedFor?: string } = {},
  ) {
    this.#world = world;
    this.#address = opts.address ?? '192.0.2.1';
    this.#origin = opts.origin ?? 'http://localhost';
    this.#forwardedFor = opts.forwardedFor;
  }

  /** GET a path; remembers cookies and the page's CSRF token. */
  get(path: string): Promise<Page> {
    return this.#send('GET', path);
  }

  /** POST a url-encoded form; `_csrf` is added from the last page unless the form sets it (or `null` omits it). */
  post(
    path: string,
    form: Record<string, string>,
    opts: { csrf?: string | null } = {},
  ): Promise<Page> {
    const csrf = opts.csrf === undefined ? this.csrf : opts.csrf;
    return this.#send('POST', path, { ...(csrf === null ? {} : { _csrf: csrf }), ...form });
  }

  /** Signs in with `key` through the sign-in form; returns the POST's response. */
  async signIn(key: string, next?: string): Promise<Page> {
    const form = await this.get(
      next ? `/dashboard?next=${encodeURIComponent(next)}` : '/dashboard',
    );
    return this.post(
      '/dashboard',
      {
        _action: 'signin',
        _login: hidden(form.text, '_login'),
        key,
        next: hidden(form.text, 'next'),
      },
      { csrf: null },
    );
  }

  /** Signs in and loads the overview so `csrf` is set; asserts it worked. */
  async signedIn(key: string): Promise<this> {
    const res = await this.signIn(key);
    assert.equal(res.status, 303, res.text);
    await this.get('/dashboard');
    assert.ok(this.csrf, 'the overview carries a CSRF token');
    return this;
  }

  async #send(method: string, path: string, form?: Record<string, string>): Promise<Page> {
    const headers: Record<string, string> = {};
    if (this.cookies.size)
      headers.cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    if (form) headers['content-type'] = 'application/x-www-form-urlencoded';
    if (this.#forwardedFor) headers['x-forwarded-for'] = this.#forwardedFor;
    const env = { incoming: { socket: { remoteAddress: this.#address } } };
    const res = await this.#world.app.request(
      new URL(path, this.#origin).toString(),
      { method, headers, ...(form ? { body: new URLSearchParams(form).toString() } : {}) },
      env,
    );
    const setCookies = res.headers.getSetCookie();
    for (const line of setCookies) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq);
      if (/max-age=0/i.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, pair!.slice(eq + 1));
    }
    const text = await res.text();
    const token = /name="_csrf" value="([^"]+)"/.exec(text)?.[1];
    if (token) this.csrf = token;
    return {
      status: res.status,
      text,
      headers: res.headers,
      location: res.headers.get('location'),
      setCookies,
    };
  }
}

/** The value of the hidden input named `name`. */
export function hidden(html: string, name: string): string {
  const m = new RegExp(`name="${name}" value="([^"]*)"`).exec(html);
  assert.ok(m, `the page has a hidden ${name} field`);
  return decode(m[1]!);
}

/** The value attribute of the input with this id, decoded. */
export function inputValue(html: string, id: string): string | undefined {
  const tag = new RegExp(`<input[^>]*id="${id}"[^>]*>`).exec(html)?.[0];
  const m = tag && /value="([^"]*)"/.exec(tag);
  return m ? decode(m[1]!) : undefined;
}

/** The text of the textarea with this id, decoded. */
export function textareaValue(html: string, id: string): string | undefined {
  const m = new RegExp(`<textarea[^>]*id="${id}"[^>]*>([^<]*)</textarea>`).exec(html);
  return m ? decode(m[1]!) : undefined;
}

/** The error shown beside the field with this id, decoded. */
export function errorBeside(html: string, id: string): string | undefined {
  const m = new RegExp(`<p class="error" id="${id}-error">([^<]*)</p>`).exec(html);
  return m ? decode(m[1]!) : undefined;
}

/** Asserts every visible input, select and textarea has a <label for> naming it. */
export function assertLabelled(html: string): void {
  const controls = [...html.matchAll(/<(input|select|textarea)\b([^>]*)>/g)].filter(
    (m) => !/type="hidden"/.test(m[2]!),
  );
  for (const [tag, , attrs] of controls) {
    const id = /\bid="([^"]+)"/.exec(attrs!)?.[1];
    assert.ok(id, `control without id: ${tag}`);
    assert.match(
      html,
      new RegExp(`<label for="${id}"[^>]*>[^<]+</label>`),
      `no visible label for #${id}`,
    );
  }
}

/** The id in a redirect to /dashboard/<kind>/<id>. */
export function idFrom(location: string | null, kind: string): string {
  const m = new RegExp(`^/dashboard/${kind}/([0-9a-f]{24})`).exec(location ?? '');
  assert.ok(m, `expected a redirect to a ${kind} page, got ${location}`);
  return m[1]!;
}

function decode(s: string): string {
  return s
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
}

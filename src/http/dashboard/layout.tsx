// The one layout: head, navigation, the signed-in application with a sign-out button, and the page's content.
import type { Child } from 'hono/jsx';
import type { DashboardSession } from '../../actions/sessions.ts';
import { ASSET_URLS } from './assets.ts';
import { Csrf, Notice } from './components.tsx';

export type Section = 'overview' | 'endpoints' | 'subscriptions' | 'events' | 'feeds' | 'none';

const NAV: { section: Section; href: string; label: string }[] = [
  { section: 'overview', href: '/dashboard', label: 'Overview' },
  { section: 'endpoints', href: '/dashboard/endpoints', label: 'Endpoints' },
  { section: 'subscriptions', href: '/dashboard/subscriptions', label: 'Subscriptions' },
  { section: 'events', href: '/dashboard/events', label: 'Events' },
  { section: 'feeds', href: '/dashboard/feeds', label: 'Feeds' },
];

type LayoutProps = {
  title: string;
  section: Section;
  session: DashboardSession | undefined;
  children: Child;
  notice?: string | undefined;
  error?: string | undefined;
};

/** Wraps a page; the navigation and sign-out appear only when signed in. */
export function Layout(p: LayoutProps) {
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>{`${p.title} · feedsub`}</title>
        <link rel="stylesheet" href={ASSET_URLS.style} />
        <script src={ASSET_URLS.script} defer></script>
      </head>
      <body>
        <header class="top">
          <a class="brand" href="/dashboard">
            feedsub
          </a>
          {p.session
            ? NAV.map((n) => (
                <a href={n.href} aria-current={n.section === p.section ? 'page' : undefined}>
                  {n.label}
                </a>
              ))
            : null}
          {p.session ? (
            <div class="who">
              <span>
                Application <strong>{p.session.applicationName}</strong>
              </span>
              <form method="post" action="/dashboard" class="inline">
                <Csrf token={p.session.csrfToken} />
                <input type="hidden" name="_action" value="signout" />
                <button type="submit">Sign out</button>
              </form>
            </div>
          ) : null}
        </header>
        <main>
          <Notice text={p.error} kind="error" />
          <Notice text={p.notice} />
          {p.children}
        </main>
      </body>
    </html>
  );
}

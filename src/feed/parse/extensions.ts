// Extension elements as fallbacks for an item's own: Media RSS, iTunes, Dublin Core and Atom elements inside RSS.
import type { AtomNs, ItunesNs, MediaNs } from 'feedsmith';
import { atomText, guessed, type Typed } from './entry.ts';
import { resolveUrl } from './urls.ts';
import { personName, plainName, text, type Person } from './values.ts';

type Media = MediaNs.ItemOrFeed;
type MediaContent = MediaNs.Content;

/** What an item's extension elements add: summary and content candidates (after the item's own), people,
 *  categories and an image. media:content files are not made enclosures: feedparser and gofeed keep them apart, and
 *  an item's first enclosure is part of its key (a new one would change the keys of existing entries). */
export type Extras = {
  summary: Typed[];
  content: Typed[];
  authors: Array<string | null | undefined>;
  categories: Array<string | null | undefined>;
  image: string | null;
};

/** The extras of an item from its namespaced children (any may be missing). `base` resolves their URLs. */
export function itemExtras(
  ns: { media?: Media; itunes?: ItunesNs.Item; atom?: AtomNs.Entry<string> },
  base: string | null,
): Extras {
  const { media, itunes, atom } = ns;
  const contents = mediaContents(media);
  return {
    summary: [
      atomText(atom?.summary, base),
      guessed(itunes?.summary),
      mediaDescription(media),
      guessed(itunes?.subtitle),
    ],
    content: [atomText(atom?.content, base)],
    authors: [
      ...(atom?.authors ?? []).map((p: Person) => personName(p)),
      plainName(itunes?.author),
    ],
    categories: [
      ...(atom?.categories ?? []).map((c) => c.term ?? c.label),
      ...(itunes?.keywords ?? []),
    ],
    image:
      firstUrl(mediaThumbnails(media), base) ??
      resolveUrl(itunes?.image, base) ??
      firstUrl(contents.filter(isImage), base),
  };
}

// media:description (plain unless type="html", Media RSS §5), on the item or its first group that has one.
function mediaDescription(media: Media | undefined): Typed {
  const d = media?.description ?? media?.groups?.find((g) => g.description)?.description;
  if (d?.type?.toLowerCase() === 'html') return { value: text(d.value), kind: 'html' };
  return guessed(d?.value);
}

function mediaContents(media: Media | undefined): MediaContent[] {
  return [...(media?.contents ?? []), ...(media?.groups ?? []).flatMap((g) => g.contents ?? [])];
}

function mediaThumbnails(media: Media | undefined): Array<{ url?: string }> {
  return [
    ...(media?.thumbnails ?? []),
    ...(media?.groups ?? []).flatMap((g) => g.thumbnails ?? []),
    ...mediaContents(media).flatMap((c) => c.thumbnails ?? []),
  ];
}

// Media RSS §5: medium="image", or an image/* type.
function isImage(c: MediaContent): boolean {
  return c.medium?.toLowerCase() === 'image' || /^image\//i.test(c.type ?? '');
}

function firstUrl(list: Array<{ url?: string }>, base: string | null): string | null {
  for (const item of list) {
    const url = resolveUrl(item.url, base);
    if (url) return url;
  }
  return null;
}

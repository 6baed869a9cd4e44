// The User-Agent of every request feedsub makes: feed fetches, webhook deliveries and test events.
import type { Config } from '../config.ts';
import { FEEDSUB_VERSION } from '../version.ts';

/** poll.user_agent when set, else "feedsub/<version> (+https://github.com/feedsub/feedsub)". */
export function userAgent(config: Config): string {
  return (
    config.poll.user_agent || `feedsub/${FEEDSUB_VERSION} (+https://github.com/feedsub/feedsub)`
  );
}

// The bench's knobs: how many feeds (BENCH_FEEDS, default 1000), poll concurrency, delivery trials, parse threads.
export const FEEDS = Number(process.env.BENCH_FEEDS ?? 1000);
export const CONCURRENCY = 16;
export const TRIALS = 5;
/** poll.parse_workers of the bench's feedsub and its `serve` phases (BENCH_PARSE_WORKERS; 0: the daemon's own choice). */
export const PARSE_WORKERS = Number(process.env.BENCH_PARSE_WORKERS ?? 0);

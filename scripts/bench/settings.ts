// The bench's knobs: how many feeds (BENCH_FEEDS, default 1000), poll concurrency, and delivery trials.
export const FEEDS = Number(process.env.BENCH_FEEDS ?? 1000);
export const CONCURRENCY = 16;
export const TRIALS = 5;

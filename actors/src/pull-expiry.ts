/**
 * Lifetime of each pull request of a long-lived JetStream consumer (`consume({expires})`): the
 * placer's wake-on-post watcher, a job's event stream. The client pulls again when a request
 * expires, or when it misses two idle heartbeats (half of this each), as it does once the server
 * holding the consumer is lost or restarted. nats.js's default (30 s) left a post made after such
 * a loss undelivered for over 30 s (measured: not within 40 s, on a 3-server cluster); with 2 s it
 * is delivered about 2 s after the stream takes messages again. The cost is one pull request
 * every 2 s per idle consumer.
 */
export const PULL_EXPIRES_MS = 2_000;

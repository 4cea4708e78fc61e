/** @packageDocumentation @troupe/testkit: Test harness: real nats-server and dockerd, fake OpenAI-compatible server. */
export const PACKAGE_NAME = '@troupe/testkit';

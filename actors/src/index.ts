/** @packageDocumentation @troupe/actors: The Troupe actor runtime over NATS JetStream. */
export const PACKAGE_NAME = '@troupe/actors';

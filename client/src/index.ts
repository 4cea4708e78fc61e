/** @packageDocumentation @troupe/client: gRPC client SDK and the troupe CLI. */
export const PACKAGE_NAME = '@troupe/client';

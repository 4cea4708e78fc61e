/** @packageDocumentation @troupe/proto: Wire contracts: subjects, names, errors and the gRPC job API. */
export const PACKAGE_NAME = '@troupe/proto';

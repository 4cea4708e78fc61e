/** @packageDocumentation @troupe/node-agent: Host process for sandbox, evaluator and VM actors. */
export const PACKAGE_NAME = '@troupe/node-agent';

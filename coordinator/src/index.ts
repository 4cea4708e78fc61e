/** @packageDocumentation @troupe/coordinator: Directory, scheduler, placement, budget ledger and job manager. */
export const PACKAGE_NAME = '@troupe/coordinator';

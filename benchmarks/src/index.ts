/** @packageDocumentation @troupe/benchmarks: Benchmark drivers and shipped task suites. */
export const PACKAGE_NAME = '@troupe/benchmarks';

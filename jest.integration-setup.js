// Integration tests start real services; give each test up to two minutes (testTimeout cannot be
// set per project in jest.config.js).
jest.setTimeout(120_000);

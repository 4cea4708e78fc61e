'use strict';

/**
 * Parses `a=1&b=2` (a leading `?` is ignored) into an object; a repeated key keeps its last
 * value, and a key without `=` gets the empty string.
 * @param {string} query
 * @returns {Record<string, string>}
 */
function parseQuery(query) {
  const out = {};
  const text = query.startsWith('?') ? query.slice(1) : query;
  for (const pair of text.split('&')) {
    if (pair === '') continue;
    const [key, value] = pair.split('=');
    out[decodeURIComponent(key)] = decodeURIComponent(value ?? '');
  }
  return out;
}

/**
 * Formats an object as a query string (keys in insertion order).
 * @param {Record<string, string | number>} params
 * @returns {string}
 */
function stringifyQuery(params) {
  return Object.entries(params)
    .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`)
    .join('&');
}

module.exports = { parseQuery, stringifyQuery };

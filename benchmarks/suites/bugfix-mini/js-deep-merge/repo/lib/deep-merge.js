'use strict';

function isPlainObject(value) {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * Merges `source` into `target` recursively: plain objects are merged key by key, anything else
 * in `source` (arrays included) replaces what `target` has.
 * @param {object} target
 * @param {object} source
 * @returns {object} the merged configuration
 */
function deepMerge(target, source) {
  for (const [key, value] of Object.entries(source)) {
    if (isPlainObject(value) && isPlainObject(target[key])) {
      target[key] = deepMerge(target[key], value);
    } else {
      target[key] = value;
    }
  }
  return target;
}

module.exports = { deepMerge };

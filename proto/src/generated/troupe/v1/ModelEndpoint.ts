// Original file: troupe/v1/jobs.proto


/**
 * An OpenAI-compatible server holding the policy, e.g. a vLLM server per
 * policy version. Untrusted: the cluster sends it no API key or credential.
 */
export interface ModelEndpoint {
  /**
   * http(s) base URL without credentials, e.g. "http://policy-17:8000/v1".
   */
  'baseUrl'?: (string);
  /**
   * Model id sent in each request, [A-Za-z0-9][A-Za-z0-9._:/-]{0,127}.
   */
  'model'?: (string);
}

/**
 * An OpenAI-compatible server holding the policy, e.g. a vLLM server per
 * policy version. Untrusted: the cluster sends it no API key or credential.
 */
export interface ModelEndpoint__Output {
  /**
   * http(s) base URL without credentials, e.g. "http://policy-17:8000/v1".
   */
  'baseUrl': (string);
  /**
   * Model id sent in each request, [A-Za-z0-9][A-Za-z0-9._:/-]{0,127}.
   */
  'model': (string);
}

/** A 200 response (or stream) that does not have the shape of a chat completion. */
export class MalformedResponseError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MalformedResponseError';
  }
}

import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { type IncomingMessage } from 'node:http';

/** Name of the session cookie the login page sets. */
export const SESSION_COOKIE = 'troupe_dashboard';

/** What {@link DashboardAuth} needs. */
export interface DashboardAuthOptions {
  /** The job API's bearer token: the only credential the login page accepts. */
  token: string;
  /** How long a session lasts after login. @default 43_200_000 (12 h) */
  sessionTtlMs?: number;
  /** Clock, for tests. @default Date.now */
  now?: () => number;
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

/**
 * The dashboard's login: a person types the job API's bearer token once; the server answers with
 * a random session id in an HttpOnly, SameSite=Strict cookie. The token itself never appears in a
 * URL or a cookie, and is compared in constant time (both sides hashed first, as the gRPC server
 * does).
 */
export class DashboardAuth {
  private readonly expected: Buffer;
  private readonly ttlMs: number;
  private readonly now: () => number;
  /** sha256(session id) → expiry; only digests are kept, so a heap dump leaks no live session. */
  private readonly sessions = new Map<string, number>();

  constructor(options: DashboardAuthOptions) {
    this.expected = digest(options.token);
    this.ttlMs = options.sessionTtlMs ?? 43_200_000;
    this.now = options.now ?? Date.now;
  }

  /** Whether `token` is the job API's token. */
  checkToken(token: string): boolean {
    return timingSafeEqual(digest(token.trim()), this.expected);
  }

  /** Starts a session; returns the `Set-Cookie` header value. */
  login(secure: boolean): string {
    const id = randomBytes(32).toString('base64url');
    this.prune();
    this.sessions.set(digest(id).toString('hex'), this.now() + this.ttlMs);
    const maxAge = Math.floor(this.ttlMs / 1000);
    return `${SESSION_COOKIE}=${id}; HttpOnly; SameSite=Strict; Path=/; Max-Age=${maxAge}${secure ? '; Secure' : ''}`;
  }

  /** Ends the request's session; returns the `Set-Cookie` header value that clears it. */
  logout(req: IncomingMessage): string {
    const id = sessionIdOf(req);
    if (id !== undefined) this.sessions.delete(digest(id).toString('hex'));
    return `${SESSION_COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0`;
  }

  /** Whether the request carries a live session cookie. */
  isLoggedIn(req: IncomingMessage): boolean {
    const id = sessionIdOf(req);
    if (id === undefined) return false;
    const key = digest(id).toString('hex');
    const expiry = this.sessions.get(key);
    if (expiry === undefined) return false;
    if (expiry <= this.now()) {
      this.sessions.delete(key);
      return false;
    }
    return true;
  }

  private prune(): void {
    const now = this.now();
    for (const [key, expiry] of this.sessions) if (expiry <= now) this.sessions.delete(key);
  }
}

/** The session id from the request's `Cookie` header, if any. */
function sessionIdOf(req: IncomingMessage): string | undefined {
  const header = req.headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === SESSION_COOKIE) {
      const value = part.slice(eq + 1).trim();
      return /^[A-Za-z0-9_-]{20,100}$/.test(value) ? value : undefined;
    }
  }
  return undefined;
}

import { type StoredMsg } from '@nats-io/jetstream';
import {
  EMPTY_INBOX_TRUST_MS,
  InboxReader,
  MAX_LAGGING_READS,
  MAX_PUSHED_BYTES,
  type PushedMessage,
} from '../../src/internal/inbox-reader';

/** An inbox stream in memory: the read port answers the first stored sequence after `after`. */
class FakeInbox {
  readonly seqs: number[] = [];
  /** The `after` of every read, in order. */
  readonly reads: number[] = [];
  /** When set, reads wait until the test releases them (a read in flight). */
  gate?: Promise<void>;

  readonly read = async (after: number): Promise<StoredMsg | null> => {
    this.reads.push(after);
    if (this.gate) await this.gate;
    const seq = this.seqs.find((s) => s > after);
    return seq === undefined ? null : ({ seq } as StoredMsg);
  };
}

/** A reader over a fake inbox; `applied.cursor` is the activation's cursor (moved by tests). */
function setup(cursor = 0): { inbox: FakeInbox; reader: InboxReader; applied: { cursor: number } } {
  const inbox = new FakeInbox();
  const applied = { cursor };
  const reader = new InboxReader(inbox.read, applied);
  return { inbox, reader, applied };
}

/** Whether `p` settles within `ms` of fake time. */
async function settlesWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let settled = false;
  void p.then(
    () => (settled = true),
    () => (settled = true),
  );
  await jest.advanceTimersByTimeAsync(ms);
  for (let i = 0; i < 10; i++) await Promise.resolve(); // the continuations after the timer
  return settled;
}

beforeEach(() => {
  jest.useFakeTimers();
});

afterEach(() => {
  jest.useRealTimers();
});

describe('InboxReader: next message and hint sequences', () => {
  it('reads the message after the cursor, then concludes the inbox empty', async () => {
    const { inbox, reader, applied } = setup(3);
    inbox.seqs.push(2, 3, 7);
    expect(reader.wanted).toBe(true);
    expect((await reader.next())?.seq).toBe(7);
    expect(inbox.reads).toEqual([3]);
    applied.cursor = 7;
    expect(await reader.next()).toBeNull();
    expect(reader.wanted).toBe(false);
    expect(inbox.reads).toEqual([3, 7]);
  });

  it('takes a hint naming a message after the cursor and ignores one at or before it', async () => {
    const { reader } = setup(5);
    expect(await reader.next()).toBeNull();
    expect(reader.wanted).toBe(false);

    expect(reader.hinted(5)).toBe(false); // already applied: stale
    expect(reader.hinted(2)).toBe(false);
    expect(reader.wanted).toBe(false);

    expect(reader.hinted(6)).toBe(true);
    expect(reader.wanted).toBe(true);
  });

  it('reads on a hint without a sequence (a reconnect) whatever the cursor', async () => {
    const { reader } = setup(5);
    await reader.next();
    expect(reader.hinted(undefined)).toBe(true);
    expect(reader.wanted).toBe(true);
  });

  it('looks again when a hint lands while a read is in flight', async () => {
    const { inbox, reader } = setup(0);
    let release!: () => void;
    inbox.gate = new Promise((r) => (release = r));
    const first = reader.next();
    expect(reader.hinted(1)).toBe(true); // its message is not visible to the read in flight
    release();
    expect(await first).toBeNull();
    expect(reader.wanted).toBe(true); // not concluded empty: the hint came during the read
    inbox.gate = undefined;
    inbox.seqs.push(1);
    expect((await reader.next())?.seq).toBe(1);
  });
});

describe('InboxReader: empty-inbox trust window', () => {
  it(`trusts an empty read for ${EMPTY_INBOX_TRUST_MS} ms`, async () => {
    const { reader } = setup(4);
    reader.hintsSubscribed();
    expect(await reader.read(4)).toBeNull();
    expect(reader.knownEmptyAfter(4)).toBe(true);
    expect(reader.knownEmptyAfter(9)).toBe(true); // nothing after 4, so nothing after 9
    expect(reader.knownEmptyAfter(3)).toBe(false); // the read did not look at 4
    await jest.advanceTimersByTimeAsync(EMPTY_INBOX_TRUST_MS - 1);
    expect(reader.knownEmptyAfter(4)).toBe(true);
    await jest.advanceTimersByTimeAsync(1);
    expect(reader.knownEmptyAfter(4)).toBe(false);
  });

  it('trusts no empty read begun before hints arrive', async () => {
    const { reader } = setup(0);
    expect(await reader.read(0)).toBeNull();
    expect(reader.knownEmptyAfter(0)).toBe(false);
    reader.hintsSubscribed();
    expect(await reader.read(0)).toBeNull();
    expect(reader.knownEmptyAfter(0)).toBe(true);
  });

  it('stops trusting it when a hint names a newer message, or names none', async () => {
    const { reader } = setup(4);
    reader.hintsSubscribed();
    await reader.read(4);
    reader.hinted(3); // stale: says nothing about what comes after 4
    expect(reader.knownEmptyAfter(4)).toBe(true);
    reader.hinted(6);
    expect(reader.knownEmptyAfter(4)).toBe(false);
    expect(reader.knownEmptyAfter(6)).toBe(true); // a drain already past the hinted message

    await reader.read(6); // a new read made after the hint vouches again
    expect(reader.knownEmptyAfter(4)).toBe(false); // ...but only from where it looked
    expect(reader.knownEmptyAfter(6)).toBe(true);
    reader.hinted(undefined);
    expect(reader.knownEmptyAfter(6)).toBe(false);
  });

  it('is not made by a read that found a message', async () => {
    const { inbox, reader } = setup(0);
    reader.hintsSubscribed();
    inbox.seqs.push(1);
    expect((await reader.read(0))?.seq).toBe(1);
    expect(reader.knownEmptyAfter(0)).toBe(false);
  });
});

describe('InboxReader: lagging replicas', () => {
  it('re-reads a hinted message that a replica does not show yet, 10 ms doubling, then concludes empty', async () => {
    const { inbox, reader } = setup(0);
    await reader.next();
    expect(reader.hinted(5)).toBe(true);
    for (let i = 0; i < MAX_LAGGING_READS; i++) {
      const pauseMs = 10 * 2 ** i;
      const look = reader.next();
      expect(await settlesWithin(look, pauseMs - 1)).toBe(false);
      expect(await settlesWithin(look, 1)).toBe(true);
      expect(await look).toBeNull();
      expect(reader.wanted).toBe(true);
    }
    // The last read still shows nothing, and there is no leader to ask: concluded empty, at once.
    const last = reader.next();
    expect(await settlesWithin(last, 0)).toBe(true);
    expect(await last).toBeNull();
    expect(reader.wanted).toBe(false);
    expect(inbox.reads).toHaveLength(1 + MAX_LAGGING_READS + 1);
  });

  it('takes the message once the replica shows it, and starts the next lag from 10 ms', async () => {
    const { inbox, reader, applied } = setup(0);
    await reader.next();
    reader.hinted(1);
    await jest.advanceTimersByTimeAsync(0);
    const lagging = reader.next();
    await jest.advanceTimersByTimeAsync(10);
    expect(await lagging).toBeNull();
    inbox.seqs.push(1);
    expect((await reader.next())?.seq).toBe(1);
    applied.cursor = 1;

    reader.hinted(2);
    const again = reader.next();
    expect(await settlesWithin(again, 9)).toBe(false);
    expect(await settlesWithin(again, 1)).toBe(true);
  });

  it('asks the stream leader once the replicas still do not show a hinted message', async () => {
    const replica = new FakeInbox(); // a replica catching up: it has none of the posts
    const leader = new FakeInbox();
    leader.seqs.push(5);
    const applied = { cursor: 0 };
    const reader = new InboxReader(replica.read, applied, leader.read);
    await reader.next();
    reader.hinted(5); // the post that woke the actor, or its hint
    for (let i = 0; i < MAX_LAGGING_READS; i++) {
      const look = reader.next();
      await jest.advanceTimersByTimeAsync(10 * 2 ** i);
      expect(await look).toBeNull();
    }
    expect(leader.reads).toEqual([]);
    const decided = reader.next();
    expect(await settlesWithin(decided, 0)).toBe(true);
    expect((await decided)?.seq).toBe(5);
    expect(leader.reads).toEqual([0]);
    expect(replica.reads).toHaveLength(1 + MAX_LAGGING_READS + 1);

    // Applied; the next hinted message the leader does not have either: gone, the inbox is empty.
    applied.cursor = 5;
    reader.hinted(6);
    for (let i = 0; i < MAX_LAGGING_READS; i++) {
      const look = reader.next();
      await jest.advanceTimersByTimeAsync(10 * 2 ** i);
      await look;
    }
    expect(await reader.next()).toBeNull();
    expect(leader.reads).toEqual([0, 5]);
    expect(reader.wanted).toBe(false);
  });

  it('does not wait for a replica when no hint named a message after the cursor', async () => {
    const { reader } = setup(8);
    reader.hinted(8); // stale
    reader.hinted(undefined);
    const look = reader.next();
    expect(await settlesWithin(look, 0)).toBe(true);
    expect(reader.wanted).toBe(false);
  });

  it('starts the lagging pauses afresh after a retry', async () => {
    const { reader } = setup(0);
    reader.hinted(3);
    for (const ms of [10, 20]) {
      const look = reader.next();
      await jest.advanceTimersByTimeAsync(ms);
      await look;
    }
    reader.retry();
    expect(reader.wanted).toBe(true);
    const look = reader.next();
    expect(await settlesWithin(look, 9)).toBe(false);
    expect(await settlesWithin(look, 1)).toBe(true);
  });
});

describe('InboxReader: prefetch', () => {
  it('hands out a message read while the activation started, without reading again', async () => {
    const { inbox, reader } = setup(0);
    reader.hintsSubscribed();
    reader.prefetch(0, { seq: 4 } as StoredMsg);
    expect((await reader.next())?.seq).toBe(4);
    expect(inbox.reads).toEqual([]);
  });

  it('reads again at once when the early read found nothing (its hint may have gone to nobody)', async () => {
    const { inbox, reader } = setup(0);
    reader.hintsSubscribed();
    inbox.seqs.push(2); // posted after the early read, before the subscription
    reader.prefetch(0, null);
    expect(inbox.reads).toEqual([0]);
    expect((await reader.next())?.seq).toBe(2);
    expect(inbox.reads).toEqual([0]); // next() used the prefetch's read
  });

  it('drops the prefetch when the cursor is elsewhere (the state record had one)', async () => {
    const { inbox, reader, applied } = setup(6);
    inbox.seqs.push(3, 9);
    reader.prefetch(0, { seq: 3 } as StoredMsg);
    expect((await reader.next())?.seq).toBe(9);
    expect(inbox.reads).toEqual([6]);
    applied.cursor = 0; // even back where the prefetch read: it is used once at most
    expect((await reader.next())?.seq).toBe(3);
    expect(inbox.reads).toEqual([6, 0]);
  });

  it('looks again when a hint came after the prefetch and its read found nothing', async () => {
    const { inbox, reader } = setup(0);
    reader.hintsSubscribed();
    reader.prefetch(0, null);
    inbox.seqs.push(1);
    reader.hinted(1);
    expect(await reader.next()).toBeNull(); // the prefetch's read predates the post
    expect(reader.wanted).toBe(true);
    expect((await reader.next())?.seq).toBe(1);
  });
});

describe('InboxReader: reading ahead of hinted messages', () => {
  it('reads the successors of hinted messages at once, and finds an unhinted one between', async () => {
    const { inbox, reader, applied } = setup(4);
    inbox.seqs.push(5, 7, 9, 12); // 7 was posted but its hint was lost
    for (const seq of [5, 9, 12]) reader.hinted(seq);
    const got: number[] = [];
    for (let after = 4; ;) {
      const m = await reader.read(after);
      if (!m) break;
      got.push(m.seq);
      after = applied.cursor = m.seq;
    }
    expect(got).toEqual([5, 7, 9, 12]);
    // One read after each position, none twice: the reads after 5 and 9 (hinted, with a hinted
    // successor) were made ahead, before the read after 4 returned.
    expect([...inbox.reads].sort((a, b) => a - b)).toEqual([4, 5, 7, 9, 12]);
    expect(inbox.reads.slice(0, 3).sort((a, b) => a - b)).toEqual([4, 5, 9]);
  });

  it('a read ahead that found nothing is made again', async () => {
    const { inbox, reader } = setup(0);
    reader.hinted(1);
    reader.hinted(2);
    // The read ahead after 1 runs before message 2 is visible (a lagging replica).
    inbox.seqs.push(1);
    expect((await reader.read(0))?.seq).toBe(1);
    inbox.seqs.push(2);
    expect((await reader.read(1))?.seq).toBe(2);
    expect(inbox.reads.filter((a) => a === 1)).toHaveLength(2);
  });
});

describe('InboxReader: messages pushed by the inbox watcher', () => {
  /** A push of message `seq` in delivery epoch `epoch` (payload `bytes` long). */
  const push = (seq: number, epoch: number, bytes = 1): PushedMessage => ({
    msg: { seq, data: new Uint8Array(bytes) },
    epoch,
  });
  /** Push and hint, as the activation does with the watcher's delivery. */
  const deliver = (reader: InboxReader, p: PushedMessage) => {
    reader.pushed(p);
    reader.hinted(p.msg.seq);
  };

  it('reads nothing for a push that follows another of its epoch', async () => {
    const { inbox, reader, applied } = setup(0);
    inbox.seqs.push(4, 9, 12);
    deliver(reader, push(4, 1));
    deliver(reader, push(9, 1));
    deliver(reader, push(12, 1));
    // The first push proves nothing about what lies before it: read.
    expect((await reader.next())?.seq).toBe(4);
    expect(inbox.reads).toEqual([0]);
    applied.cursor = 4;
    const second = await reader.next();
    expect(second?.seq).toBe(9);
    expect(second?.data).toBeInstanceOf(Uint8Array);
    applied.cursor = 9;
    expect((await reader.readMore(9))?.seq).toBe(12);
    // Neither 9 nor 12 cost a read.
    expect(inbox.reads).toEqual([0]);
  });

  it('reads when the epoch changed between two pushes (deliveries may have been missed)', async () => {
    const { inbox, reader, applied } = setup(4);
    // 6 was delivered elsewhere (another placer, a lost pull): epoch 2 begins at 9.
    inbox.seqs.push(4, 6, 9);
    deliver(reader, push(4, 1));
    deliver(reader, push(9, 2));
    expect((await reader.next())?.seq).toBe(6);
    expect(inbox.reads).toEqual([4]);
    applied.cursor = 6;
    expect((await reader.next())?.seq).toBe(9);
    expect(inbox.reads).toEqual([4, 6]);
  });

  it('never takes a push that goes backwards, or one already applied', async () => {
    const { inbox, reader, applied } = setup(0);
    inbox.seqs.push(3, 5, 8);
    deliver(reader, push(5, 1));
    deliver(reader, push(3, 1)); // a repeat would come in another epoch; still not trusted
    expect((await reader.next())?.seq).toBe(3);
    applied.cursor = 8;
    deliver(reader, push(8, 1)); // applied already (read from the stream first)
    expect(await reader.next()).toBeNull();
    expect(inbox.reads).toEqual([0, 8]);
  });

  it('drops pushes behind the cursor and keeps at most MAX_PUSHED_BYTES', async () => {
    const { inbox, reader, applied } = setup(0);
    const big = MAX_PUSHED_BYTES / 2 + 1;
    inbox.seqs.push(1, 2, 3, 4);
    deliver(reader, push(1, 1));
    deliver(reader, push(2, 1, big));
    deliver(reader, push(3, 1, big)); // over the budget: not kept
    deliver(reader, push(4, 1));
    applied.cursor = 2;
    // The push kept after 1 is behind the cursor now; 3 was not kept: read. 4 follows 3.
    expect((await reader.next())?.seq).toBe(3);
    expect(inbox.reads).toEqual([2]);
    applied.cursor = 3;
    expect((await reader.next())?.seq).toBe(4);
    expect(inbox.reads).toEqual([2]);
  });
});

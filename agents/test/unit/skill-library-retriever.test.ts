import { Bm25Retriever, skillTerms } from '../../src/skill-library/bm25-retriever';
import { type SkillRecord, skillSourceHash } from '../../src/skill-library/skill-record';

// The skill library's default retriever (issue 19): lexical BM25 over name, docstring and the
// identifiers of the source.

function skill(name: string, description: string, body = 'pass', version = 1): SkillRecord {
  const source = `def ${name}():\n    ${body}\n`;
  return {
    libraryId: 'lib',
    name,
    version,
    source,
    description,
    scenario: 's',
    dependencies: [],
    sourceHash: skillSourceHash(source),
    provenance: {
      jobId: 'j',
      scenario: 's',
      taskId: 's_1',
      step: 1,
      outcome: 'passed',
      at: '2026-12-02T08:00:00.000Z',
    },
  };
}

const q = (text: string) => ({ scenario: 'other', text });

describe('skillTerms', () => {
  it('splits identifiers at underscores and camel case, without stop words', () => {
    expect(skillTerms('split_bill sendPaymentRequest of the x')).toEqual([
      'split',
      'bill',
      'send',
      'payment',
      'request',
    ]);
  });
});

describe('Bm25Retriever', () => {
  const skills = [
    skill('split_bill', 'Split a bill among people and request payment.'),
    skill('find_contact', 'Look up a contact by name.', 'return apis.contacts.search(name)'),
    skill('send_mail', 'Send an email to a contact.', 'return apis.mail.send(to, body)'),
  ];
  const r = new Bm25Retriever();

  it('puts the skill whose name and docstring match first', async () => {
    const ranked = await r.rank(q('Split the dinner bill with my friends'), skills, 3);
    expect(ranked.map((s) => s.name)).toEqual(['split_bill']);
  });

  it('matches identifiers in the source', async () => {
    const ranked = await r.rank(q('email Bob about contacts'), skills, 3);
    expect(ranked.map((s) => s.name)).toEqual(['send_mail', 'find_contact']);
  });

  it('weights rare terms higher than common ones', () => {
    const scores = r.scores('contact payment', skills);
    // "contact" is in two skills, "payment" in one: the payment skill wins.
    expect(scores[0]?.skill.name).toBe('split_bill');
    expect(scores.map((s) => s.skill.name).sort()).toEqual(
      ['find_contact', 'send_mail', 'split_bill'].sort(),
    );
  });

  it('respects the limit and leaves out skills without a shared term', async () => {
    expect(await r.rank(q('contact'), skills, 1)).toHaveLength(1);
    expect(await r.rank(q('contact'), skills, 0)).toEqual([]);
    expect(await r.rank(q('weather forecast'), skills, 3)).toEqual([]);
    expect(await r.rank(q(''), skills, 3)).toEqual([]);
  });

  it('breaks ties by the newer version', async () => {
    const ranked = await r.rank(
      q('bill'),
      [skill('a_bill', 'x', 'pass', 1), skill('b_bill', 'x', 'pass', 4)],
      2,
    );
    expect(ranked.map((s) => s.name)).toEqual(['b_bill', 'a_bill']);
  });
});

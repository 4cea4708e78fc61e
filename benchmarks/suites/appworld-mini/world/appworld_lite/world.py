"""The world: one SQLite file holding every app's data, created as a pure function of a seed.

`generate(db_path, seed)` writes a fresh world; `World(db_path)` opens one and builds the `apis`
object. The world's clock is fixed (`NOW`), so timestamps written by the APIs are reproducible and
a gold solution replayed in a fresh world produces the same rows as an agent doing the same thing.
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import string
from typing import Any

NOW = "2026-06-01T09:00"
APPS = ("supervisor", "api_docs", "contacts", "calendar", "mail", "notes", "payments")
LOGIN_APPS = ("contacts", "calendar", "mail", "notes", "payments")
RELATIONSHIPS = ("friend", "coworker", "family")

SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE people (id INTEGER PRIMARY KEY, first_name TEXT NOT NULL, last_name TEXT NOT NULL,
  email TEXT NOT NULL UNIQUE, phone TEXT NOT NULL, birthday TEXT NOT NULL, city TEXT NOT NULL);
CREATE TABLE passwords (app TEXT NOT NULL, email TEXT NOT NULL, password TEXT NOT NULL,
  PRIMARY KEY (app, email));
CREATE TABLE contacts (id INTEGER PRIMARY KEY AUTOINCREMENT, first_name TEXT NOT NULL,
  last_name TEXT NOT NULL, email TEXT NOT NULL, phone TEXT NOT NULL, relationship TEXT NOT NULL,
  birthday TEXT NOT NULL, city TEXT NOT NULL);
CREATE TABLE events (id INTEGER PRIMARY KEY AUTOINCREMENT, title TEXT NOT NULL,
  start_time TEXT NOT NULL, end_time TEXT NOT NULL, location TEXT NOT NULL,
  description TEXT NOT NULL, attendees TEXT NOT NULL, created_at TEXT NOT NULL);
CREATE TABLE emails (id INTEGER PRIMARY KEY AUTOINCREMENT, sender TEXT NOT NULL,
  recipients TEXT NOT NULL, subject TEXT NOT NULL, body TEXT NOT NULL, sent_at TEXT NOT NULL);
CREATE TABLE notes (id INTEGER PRIMARY KEY AUTOINCREMENT, title TEXT NOT NULL,
  content TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
CREATE TABLE balances (email TEXT PRIMARY KEY, balance REAL NOT NULL);
CREATE TABLE transactions (id INTEGER PRIMARY KEY AUTOINCREMENT, sender TEXT NOT NULL,
  receiver TEXT NOT NULL, amount REAL NOT NULL, description TEXT NOT NULL,
  created_at TEXT NOT NULL);
CREATE TABLE payment_requests (id INTEGER PRIMARY KEY AUTOINCREMENT, requester TEXT NOT NULL,
  payer TEXT NOT NULL, amount REAL NOT NULL, description TEXT NOT NULL, status TEXT NOT NULL,
  created_at TEXT NOT NULL, resolved_at TEXT);
"""

# Tables and columns the grader ignores: bookkeeping, not the user's data.
IGNORED_TABLES = ("meta",)
VOLATILE_COLUMNS = ("id", "created_at", "updated_at", "sent_at", "resolved_at")

FIRST = ["Alice", "Bruno", "Chloe", "Dmitri", "Elena", "Farid", "Grace", "Hiro", "Ines", "Jonas",
         "Kara", "Liam", "Maya", "Nikhil", "Olga", "Pedro", "Quinn", "Rosa", "Samir", "Tara",
         "Umar", "Vera", "Wen", "Ximena", "Yusuf", "Zoe", "Aaron", "Bianca", "Carlos", "Dana",
         "Emil", "Fatima", "Gustav", "Hana", "Ivan", "Julia"]
LAST = ["Anders", "Baker", "Castillo", "Dubois", "Eriksen", "Fischer", "Garcia", "Haddad",
        "Ivanova", "Jensen", "Kim", "Lopez", "Moreau", "Nakamura", "Okafor", "Petrov", "Quispe",
        "Rossi", "Singh", "Tanaka", "Ueda", "Varga", "Weber", "Xu", "Yilmaz", "Zhang"]
CITIES = ("Seattle", "Boston", "Austin", "Denver", "Chicago", "Portland")
DOMAINS = ("mail.test", "inbox.test", "post.test")

# Fixtures the scenarios rely on; generation guarantees each exists in every world.
BILL_NOTES = ("Dinner at Luigi's", "Cabin weekend", "Concert tickets")
BIRTHDAY_MONTHS = {"friend": 7, "coworker": 8, "family": 9}
AGENDA_DATES = ("2026-06-03", "2026-06-05", "2026-06-09")
REQUEST_LIMITS = {"friend": 50, "coworker": 30, "family": 80}
CITY_FIXTURES = ("Seattle", "Boston", "Austin")

EVENT_TITLES = ("Dentist", "Gym", "Team standup", "Lunch with a friend", "Piano lesson",
                "Book club", "Yoga", "Code review", "Haircut", "Budget review", "Car service",
                "Volunteering", "Language class", "1:1 with manager", "Grocery run")
EVENT_LOCATIONS = ("Home", "Office", "Downtown", "Online", "Community center", "Cafe")
SLOTS = ("07:30", "08:00", "09:00", "10:30", "12:00", "13:30", "15:00", "16:30", "18:00", "19:30")
MAIL_SUBJECTS = ("Quick question", "Weekend plans", "Photos from the trip", "Meeting notes",
                 "Recipe you asked for", "Re: the book", "Invoice", "Thanks!", "Catching up",
                 "Reminder")
NOTE_TITLES = ("Grocery list", "Books to read", "Gift ideas", "Packing list", "Workout plan",
               "Movie night picks")
PAY_DESCRIPTIONS = ("Lunch", "Taxi", "Groceries", "Movie tickets", "Coffee", "Gas", "Rent share",
                    "Birthday gift", "Utilities", "Drinks")


class World:
    """An open world database and the apps bound to it."""

    def __init__(self, db_path: str) -> None:
        if not os.path.exists(db_path):
            raise FileNotFoundError(f"no world at {db_path}; create one with "
                                    f"python3 -m appworld_lite.init --db {db_path} --seed N")
        self.db_path = db_path
        self.state_dir = os.path.dirname(os.path.abspath(db_path))
        self.answer_path = os.path.join(self.state_dir, "answer.json")
        # Autocommit: every API call is durable at once, so the grader can read the file any time.
        self.db = sqlite3.connect(db_path, isolation_level=None)
        # Committed rows reach the OS at once (another process sees them); no fsync, because a
        # world outlives neither its sandbox nor a host crash.
        self.db.execute("PRAGMA synchronous = OFF")
        self._meta = dict(self.db.execute("SELECT key, value FROM meta").fetchall())
        from .apps import build_apps
        self.apps = build_apps(self)
        from .core import Apis
        self.apis = Apis(self.apps)

    def secret(self) -> str:
        return self._meta["secret"]

    def seed(self) -> int:
        return int(self._meta["seed"])

    def supervisor_email(self) -> str:
        return self._meta["supervisor_email"]

    def completion(self) -> dict[str, Any]:
        """`{"completed": bool, "answer": ...}` as recorded by apis.supervisor.complete_task."""
        try:
            with open(self.answer_path, encoding="utf-8") as f:
                data = json.load(f)
            return {"completed": bool(data.get("completed")), "answer": data.get("answer")}
        except FileNotFoundError:
            return {"completed": False, "answer": None}

    def close(self) -> None:
        self.db.close()


def _password(rng: random.Random) -> str:
    return "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(12))


def _phone(rng: random.Random) -> str:
    return f"{rng.randint(200, 989)}-{rng.randint(200, 989)}-{rng.randint(1000, 9999)}"


def generate(db_path: str, seed: int) -> dict[str, str]:
    """Writes a fresh world for `seed` at `db_path` (replacing any file there); returns the
    supervisor's `{"name", "email"}`. Same seed, same rows, on any machine."""
    rng = random.Random(seed)
    os.makedirs(os.path.dirname(os.path.abspath(db_path)), exist_ok=True)
    for suffix in ("", "-journal", "-wal", "-shm"):
        if os.path.exists(db_path + suffix):
            os.remove(db_path + suffix)
    answer = os.path.join(os.path.dirname(os.path.abspath(db_path)), "answer.json")
    if os.path.exists(answer):
        os.remove(answer)
    db = sqlite3.connect(db_path)
    db.execute("PRAGMA synchronous = OFF")
    db.executescript(SCHEMA)

    # People: the supervisor first, then 24 others with distinct names.
    names: list[tuple[str, str]] = []
    while len(names) < 25:
        n = (rng.choice(FIRST), rng.choice(LAST))
        if n not in names and n[0] not in [m[0] for m in names]:
            names.append(n)
    people = []
    for first, last in names:
        people.append({
            "first_name": first, "last_name": last,
            "email": f"{first.lower()}.{last.lower()}@{rng.choice(DOMAINS)}",
            "phone": _phone(rng),
            "birthday": f"{rng.randint(1960, 2004)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
            "city": rng.choice(CITIES),
        })
    sup, others = people[0], people[1:]
    db.executemany("INSERT INTO people (first_name, last_name, email, phone, birthday, city) "
                   "VALUES (:first_name, :last_name, :email, :phone, :birthday, :city)", people)
    db.executemany("INSERT INTO meta VALUES (?, ?)", [
        ("seed", str(seed)), ("secret", "%032x" % rng.getrandbits(128)),
        ("supervisor_email", sup["email"]), ("now", NOW)])
    db.executemany("INSERT INTO passwords VALUES (?, ?, ?)",
                   [(app, sup["email"], _password(rng)) for app in LOGIN_APPS])

    # The supervisor's address book: 21 of the others, 7 per relationship.
    book = rng.sample(others, 21)
    rels = list(RELATIONSHIPS) * 7
    rng.shuffle(rels)
    cities = list(CITY_FIXTURES) * 2 + [rng.choice(CITIES) for _ in range(15)]
    rng.shuffle(cities)
    contacts = []
    for p, rel, city in zip(book, rels, cities):
        contacts.append({**p, "relationship": rel, "city": city})
    for rel, month in BIRTHDAY_MONTHS.items():
        of_rel = [c for c in contacts if c["relationship"] == rel]
        for c in rng.sample(of_rel, 2):
            c["birthday"] = c["birthday"][:5] + f"{month:02d}" + c["birthday"][7:]
    db.executemany(
        "INSERT INTO contacts (first_name, last_name, email, phone, relationship, birthday, city) "
        "VALUES (:first_name, :last_name, :email, :phone, :relationship, :birthday, :city)",
        contacts)
    full = lambda c: f"{c['first_name']} {c['last_name']}"  # noqa: E731

    # Mail: everyday mail, plus "New phone number" mails from two contacts per relationship.
    mails = []
    for _ in range(24):
        p = rng.choice(others)
        subject = rng.choice(MAIL_SUBJECTS)
        when = f"2026-05-{rng.randint(1, 31):02d}T{rng.randint(7, 22):02d}:{rng.randint(0, 59):02d}"
        if rng.random() < 0.25:
            mails.append((sup["email"], [p["email"]], subject,
                          f"Hi {p['first_name']},\n\nAbout '{subject.lower()}': sounds good.\n\n"
                          f"{sup['first_name']}", when))
        else:
            mails.append((p["email"], [sup["email"]], subject,
                          f"Hi {sup['first_name']},\n\nJust a note about {subject.lower()}.\n\n"
                          f"{p['first_name']}", when))
    used_phones = {c["phone"] for c in contacts}
    for rel in RELATIONSHIPS:
        for c in rng.sample([c for c in contacts if c["relationship"] == rel], 2):
            new = _phone(rng)
            while new in used_phones:
                new = _phone(rng)
            used_phones.add(new)
            when = f"2026-05-{rng.randint(20, 31):02d}T{rng.randint(7, 22):02d}:{rng.randint(0, 59):02d}"
            mails.append((c["email"], [sup["email"]], "New phone number",
                          f"Hi {sup['first_name']},\n\nI changed carriers: my new phone number is "
                          f"{new}. Please update your address book.\n\n{c['first_name']}", when))
    mails.sort(key=lambda m: m[4])
    db.executemany("INSERT INTO emails (sender, recipients, subject, body, sent_at) "
                   "VALUES (?, ?, ?, ?, ?)",
                   [(s, json.dumps(sorted(r)), sub, b, w) for s, r, sub, b, w in mails])

    # Notes: everyday notes, plus one bill note per BILL_NOTES title.
    notes = []
    for title in rng.sample(NOTE_TITLES, 4):
        items = rng.sample(["milk", "bread", "tea", "rice", "apples", "socks", "charger",
                            "sunscreen", "plants", "candles", "pasta", "a novel"], 4)
        notes.append((title, "\n".join(f"- {i}" for i in items)))
    for title in BILL_NOTES:
        group = rng.sample(contacts, rng.randint(2, 4))
        share = rng.randint(12, 60) + rng.choice((0, 0.25, 0.5, 0.75))
        total = round(share * (len(group) + 1), 2)
        notes.append((title, f"Bill split\nTotal: ${total:.2f}\n"
                             f"People: {', '.join(full(c) for c in group)}\n"
                             f"I paid the whole bill; everyone listed owes me an equal share."))
    rng.shuffle(notes)
    db.executemany("INSERT INTO notes (title, content, created_at, updated_at) VALUES (?, ?, ?, ?)",
                   [(t, c, "2026-05-15T12:00", "2026-05-15T12:00") for t, c in notes])

    # Calendar: May and June 2026, at least three events on each agenda date.
    events = []
    for month, days in ((5, 31), (6, 30)):
        for day in range(1, days + 1):
            date = f"2026-{month:02d}-{day:02d}"
            count = rng.randint(3, 4) if date in AGENDA_DATES else rng.choice((0, 0, 1, 1, 2))
            for slot in sorted(rng.sample(SLOTS, count)):
                h, m = map(int, slot.split(":"))
                end = f"{h + rng.choice((1, 1, 2)):02d}:{m:02d}"
                guests = rng.sample(contacts, rng.choice((0, 0, 1, 2)))
                events.append((rng.choice(EVENT_TITLES), f"{date}T{slot}", f"{date}T{end}",
                               rng.choice(EVENT_LOCATIONS), "",
                               json.dumps(sorted(g["email"] for g in guests)), "2026-04-30T12:00"))
    db.executemany("INSERT INTO events (title, start_time, end_time, location, description, "
                   "attendees, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)", events)

    # Payments: balances, April-May transactions, pending and settled requests.
    db.executemany("INSERT INTO balances VALUES (?, ?)",
                   [(sup["email"], 3000.0)] +
                   [(p["email"], float(rng.randint(100, 2000))) for p in others])
    txs = []
    for i in range(40):
        p = rng.choice(contacts) if rng.random() < 0.8 else rng.choice(others)
        if i < 3:  # at least one payment to each relationship in May
            p = rng.choice([c for c in contacts if c["relationship"] == RELATIONSHIPS[i]])
        amount = round(rng.randint(5, 150) + rng.choice((0, 0.5, 0.25, 0.99)), 2)
        month = 5 if i < 3 or rng.random() < 0.7 else 4
        when = f"2026-{month:02d}-{rng.randint(1, 30):02d}T{rng.randint(7, 22):02d}:{rng.randint(0, 59):02d}"
        sent = i < 3 or rng.random() < 0.55
        txs.append((sup["email"], p["email"]) if sent else (p["email"], sup["email"]))
        txs[-1] = (*txs[-1], amount, rng.choice(PAY_DESCRIPTIONS), when)
    txs.sort(key=lambda t: t[4])
    db.executemany("INSERT INTO transactions (sender, receiver, amount, description, created_at) "
                   "VALUES (?, ?, ?, ?, ?)", txs)
    reqs = []
    for rel, limit in REQUEST_LIMITS.items():
        of_rel = [c for c in contacts if c["relationship"] == rel]
        lo, hi = rng.sample(of_rel, 2)
        reqs.append((lo["email"], sup["email"], float(limit - rng.randint(1, 10)), "pending"))
        reqs.append((hi["email"], sup["email"], float(limit + rng.randint(5, 40)), "pending"))
    for _ in range(5):
        p = rng.choice(others)
        status = rng.choice(("pending", "approved", "denied"))
        reqs.append((p["email"], sup["email"], float(rng.randint(5, 120)), status))
    for _ in range(3):
        p = rng.choice(contacts)
        reqs.append((sup["email"], p["email"], float(rng.randint(5, 60)), "pending"))
    rng.shuffle(reqs)
    db.executemany("INSERT INTO payment_requests (requester, payer, amount, description, status, "
                   "created_at, resolved_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                   [(r, p, a, rng.choice(PAY_DESCRIPTIONS), s,
                     f"2026-05-{rng.randint(1, 31):02d}T12:00",
                     None if s == "pending" else "2026-05-31T12:00") for r, p, a, s in reqs])
    db.commit()
    db.close()
    return {"name": full(sup), "email": sup["email"]}

"""The apps of the world. Every public method is an API; its docstring is its documentation
(served by apis.api_docs), so keep the `Args:`/`Returns:` sections true."""

from __future__ import annotations

import inspect
import json
import os
import re
from typing import Any

from .core import MAX_PAGE_SIZE, App, ApiError, fail
from .world import APPS, NOW, RELATIONSHIPS


def _page(rows: list[Any], page_index: int, page_size: int) -> list[Any]:
    return rows[page_index * page_size:(page_index + 1) * page_size]


class Supervisor(App):
    name = "supervisor"
    description = "The person you act for: their profile, account passwords, and task completion."
    needs_login = False

    def show_profile(self) -> dict:
        """Show the supervisor's profile.

        Returns:
            {"first_name", "last_name", "email", "phone", "birthday", "city"}.
        """
        row = self._db.execute("SELECT first_name, last_name, email, phone, birthday, city FROM "
                               "people WHERE email = ?", (self._world.supervisor_email(),)).fetchone()
        return dict(zip(("first_name", "last_name", "email", "phone", "birthday", "city"), row))

    def show_account_passwords(self) -> list:
        """Show the supervisor's password for each app.

        Returns:
            [{"account_name": app name, "password": str}, ...].
        """
        rows = self._db.execute("SELECT app, password FROM passwords WHERE email = ? ORDER BY app",
                                (self._world.supervisor_email(),)).fetchall()
        return [{"account_name": a, "password": p} for a, p in rows]

    def complete_task(self, answer: Any = None) -> dict:
        """Mark the task complete. Call it exactly once, when you are done.

        Args:
            answer: the answer when the task asks a question (a number, string or list), else None.
        Returns:
            {"completed": true}.
        """
        try:
            json.dumps(answer, allow_nan=False)
        except (TypeError, ValueError):
            raise fail("supervisor.complete_task", "answer",
                       "must be JSON-serialisable (None, bool, finite number, string, list or "
                       "dict)", answer if isinstance(answer, float) else type(answer).__name__
                       ) from None
        if self._world.completion()["completed"]:
            raise ApiError("supervisor.complete_task: the task is already completed")
        tmp = self._world.answer_path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump({"completed": True, "answer": answer}, f)
        os.replace(tmp, self._world.answer_path)
        return {"completed": True}


class ApiDocs(App):
    name = "api_docs"
    description = "Documentation of every app and API in this world."
    needs_login = False

    def show_app_descriptions(self) -> list:
        """List the apps.

        Returns:
            [{"name": app name, "description": str}, ...].
        """
        return [{"name": a.name, "description": a.description} for a in self._world.apps.values()]

    def show_api_descriptions(self, app_name: str) -> list:
        """List the APIs of one app.

        Args:
            app_name: an app name from show_app_descriptions().
        Returns:
            [{"name": api name, "description": first line of its doc}, ...].
        """
        app = self._app("show_api_descriptions", app_name)
        return [{"name": n, "description": _doc(getattr(app, n))[0]} for n in type(app).api_names()]

    def show_api_doc(self, app_name: str, api_name: str) -> dict:
        """Show the full documentation of one API.

        Args:
            app_name: an app name from show_app_descriptions().
            api_name: an API name from show_api_descriptions(app_name=...).
        Returns:
            {"app_name", "api_name", "signature", "description", "parameters": [{"name",
            "description", "required", "default" (absent when required)}], "doc"}.
        """
        app = self._app("show_api_doc", app_name)
        if api_name not in type(app).api_names():
            raise fail("api_docs.show_api_doc", "api_name",
                       f"must be an API of {app_name}: {', '.join(type(app).api_names())}", api_name)
        fn = getattr(app, api_name)
        sig = inspect.signature(fn)
        params = []
        described = _arg_docs(inspect.getdoc(fn) or "")
        for p in sig.parameters.values():
            entry: dict[str, Any] = {"name": p.name, "description": described.get(p.name, ""),
                                     "required": p.default is inspect.Parameter.empty}
            if not entry["required"]:
                entry["default"] = p.default
            params.append(entry)
        summary, body = _doc(fn)
        return {"app_name": app_name, "api_name": api_name,
                "signature": f"apis.{app_name}.{api_name}{_plain_signature(sig)}",
                "description": summary, "parameters": params, "doc": body}

    def _app(self, api: str, app_name: Any) -> App:
        if app_name not in self._world.apps:
            raise fail(f"api_docs.{api}", "app_name",
                       f"must be one of {', '.join(self._world.apps)}", app_name)
        return self._world.apps[app_name]


def _doc(fn: Any) -> tuple[str, str]:
    doc = inspect.getdoc(fn) or ""
    return doc.split("\n", 1)[0], doc


def _arg_docs(doc: str) -> dict[str, str]:
    """The `Args:` section of a docstring as {name: description} (continuation lines joined)."""
    out: dict[str, str] = {}
    section, current = False, None
    for line in doc.splitlines():
        if line.strip() in ("Args:", "Returns:"):
            section, current = line.strip() == "Args:", None
            continue
        if not section or not line.strip():
            continue
        head, sep, rest = line.strip().partition(": ")
        if line.startswith("    ") and not line.startswith("        ") and sep and head.isidentifier():
            current = head
            out[head] = rest.strip()
        elif current is not None:
            out[current] += " " + line.strip()
    return out


def _plain_signature(sig: inspect.Signature) -> str:
    parts = []
    for p in sig.parameters.values():
        parts.append(p.name if p.default is inspect.Parameter.empty else f"{p.name}={p.default!r}")
    return f"({', '.join(parts)})"


PHONE_RE = re.compile(r"\+?[0-9][0-9 -]{5,18}[0-9]")
CONTACT_COLUMNS = ("id", "first_name", "last_name", "email", "phone", "relationship", "birthday",
                   "city")


class Contacts(App):
    name = "contacts"
    description = "The supervisor's address book: names, emails, phones, relationships, birthdays."

    def search_contacts(self, access_token: str, query: str = "", relationship: str | None = None,
                        city: str | None = None, page_index: int = 0, page_size: int = 10) -> list:
        """Search the address book (paged; sorted by last name, then first name).

        Args:
            access_token: from apis.contacts.login(...).
            query: text matched case-insensitively against first name, last name and email;
                "" matches every contact.
            relationship: only contacts with this relationship ('friend', 'coworker', 'family').
            city: only contacts living in this city.
            page_index: which page, from 0.
            page_size: contacts per page, 1..20.
        Returns:
            [{"id", "first_name", "last_name", "email", "phone", "relationship", "birthday"
            ('YYYY-MM-DD'), "city"}, ...]; an empty list past the last page.
        """
        self._auth("search_contacts", access_token)
        v = self._v("search_contacts")
        v.text("query", query, allow_empty=True)
        if relationship is not None:
            v.choice("relationship", relationship, RELATIONSHIPS)
        v.opt_text("city", city)
        page_index, page_size = v.page(page_index, page_size)
        sql = f"SELECT {', '.join(CONTACT_COLUMNS)} FROM contacts WHERE " \
              "(lower(first_name) LIKE ? OR lower(last_name) LIKE ? OR lower(email) LIKE ?)"
        like = f"%{query.lower()}%"
        args: list[Any] = [like, like, like]
        if relationship is not None:
            sql += " AND relationship = ?"
            args.append(relationship)
        if city is not None:
            sql += " AND lower(city) = lower(?)"
            args.append(city)
        sql += " ORDER BY last_name, first_name, id LIMIT ? OFFSET ?"
        args += [page_size, page_index * page_size]
        return [dict(zip(CONTACT_COLUMNS, r)) for r in self._db.execute(sql, args)]

    def show_contact(self, access_token: str, contact_id: int) -> dict:
        """Show one contact.

        Args:
            access_token: from apis.contacts.login(...).
            contact_id: the contact's id.
        Returns:
            {"id", "first_name", "last_name", "email", "phone", "relationship", "birthday", "city"}.
        """
        self._auth("show_contact", access_token)
        return dict(zip(CONTACT_COLUMNS, self._row("show_contact", contact_id)))

    def create_contact(self, access_token: str, first_name: str, last_name: str, email: str,
                       phone: str, relationship: str, birthday: str, city: str) -> dict:
        """Add a contact.

        Args:
            access_token: from apis.contacts.login(...).
            first_name: first name.
            last_name: last name.
            email: email address (unique in the address book).
            phone: phone number like '555-123-4567'.
            relationship: 'friend', 'coworker' or 'family'.
            birthday: 'YYYY-MM-DD'.
            city: city.
        Returns:
            {"contact_id": int}.
        """
        self._auth("create_contact", access_token)
        v = self._v("create_contact")
        row = (v.text("first_name", first_name), v.text("last_name", last_name),
               v.email("email", email), _phone("create_contact", phone),
               v.choice("relationship", relationship, RELATIONSHIPS), v.date("birthday", birthday),
               v.text("city", city))
        if self._db.execute("SELECT 1 FROM contacts WHERE email = ?", (row[2],)).fetchone():
            raise fail("contacts.create_contact", "email", "must not belong to an existing contact",
                       email)
        cur = self._db.execute("INSERT INTO contacts (first_name, last_name, email, phone, "
                               "relationship, birthday, city) VALUES (?, ?, ?, ?, ?, ?, ?)", row)
        return {"contact_id": cur.lastrowid}

    def update_contact(self, access_token: str, contact_id: int, phone: str | None = None,
                       email: str | None = None, city: str | None = None,
                       relationship: str | None = None) -> dict:
        """Change fields of a contact; fields left None keep their value.

        Args:
            access_token: from apis.contacts.login(...).
            contact_id: the contact's id.
            phone: new phone number like '555-123-4567'.
            email: new email address.
            city: new city.
            relationship: new relationship ('friend', 'coworker' or 'family').
        Returns:
            the updated contact.
        """
        self._auth("update_contact", access_token)
        self._row("update_contact", contact_id)
        v = self._v("update_contact")
        changes: dict[str, Any] = {}
        if phone is not None:
            changes["phone"] = _phone("update_contact", phone)
        if email is not None:
            changes["email"] = v.email("email", email)
        if city is not None:
            changes["city"] = v.text("city", city)
        if relationship is not None:
            changes["relationship"] = v.choice("relationship", relationship, RELATIONSHIPS)
        if not changes:
            raise ApiError("contacts.update_contact: give at least one of the arguments 'phone', "
                           "'email', 'city', 'relationship'")
        sets = ", ".join(f"{k} = ?" for k in changes)
        self._db.execute(f"UPDATE contacts SET {sets} WHERE id = ?", [*changes.values(), contact_id])
        return self.show_contact(access_token, contact_id)

    def delete_contact(self, access_token: str, contact_id: int) -> dict:
        """Delete a contact.

        Args:
            access_token: from apis.contacts.login(...).
            contact_id: the contact's id.
        Returns:
            {"deleted": true}.
        """
        self._auth("delete_contact", access_token)
        self._row("delete_contact", contact_id)
        self._db.execute("DELETE FROM contacts WHERE id = ?", (contact_id,))
        return {"deleted": True}

    def _row(self, api: str, contact_id: Any) -> tuple:
        self._v(api).integer("contact_id", contact_id, minimum=1)
        row = self._db.execute(f"SELECT {', '.join(CONTACT_COLUMNS)} FROM contacts WHERE id = ?",
                               (contact_id,)).fetchone()
        if row is None:
            raise fail(f"contacts.{api}", "contact_id", "must be the id of an existing contact",
                       contact_id)
        return row


def _phone(api: str, value: Any) -> str:
    if not isinstance(value, str) or not PHONE_RE.fullmatch(value):
        raise fail(f"contacts.{api}", "phone",
                   "must be a phone number of digits, spaces and '-' like '555-123-4567'", value)
    return value


EVENT_COLUMNS = ("id", "title", "start_time", "end_time", "location", "description", "attendees")


def _event(row: tuple) -> dict:
    e = dict(zip(EVENT_COLUMNS, row))
    e["attendees"] = json.loads(e["attendees"])
    return e


class Calendar(App):
    name = "calendar"
    description = "The supervisor's calendar events (times are 'YYYY-MM-DDTHH:MM', local time)."

    def show_events(self, access_token: str, date: str | None = None,
                    start_date: str | None = None, end_date: str | None = None,
                    query: str = "", page_index: int = 0, page_size: int = 10) -> list:
        """List events sorted by start time (paged).

        Args:
            access_token: from apis.calendar.login(...).
            date: only events starting on this day 'YYYY-MM-DD' (not with start_date/end_date).
            start_date: only events starting on or after this day 'YYYY-MM-DD'.
            end_date: only events starting on or before this day 'YYYY-MM-DD'.
            query: text matched case-insensitively against the title; "" matches all.
            page_index: which page, from 0.
            page_size: events per page, 1..20.
        Returns:
            [{"id", "title", "start_time", "end_time", "location", "description", "attendees"
            (list of emails)}, ...]; an empty list past the last page.
        """
        self._auth("show_events", access_token)
        v = self._v("show_events")
        v.opt_date("date", date)
        v.opt_date("start_date", start_date)
        v.opt_date("end_date", end_date)
        if date is not None and (start_date is not None or end_date is not None):
            raise fail("calendar.show_events", "date", "must not be combined with start_date or "
                       "end_date", date)
        v.text("query", query, allow_empty=True)
        page_index, page_size = v.page(page_index, page_size)
        sql = f"SELECT {', '.join(EVENT_COLUMNS)} FROM events WHERE lower(title) LIKE ?"
        args: list[Any] = [f"%{query.lower()}%"]
        if date is not None:
            sql += " AND substr(start_time, 1, 10) = ?"
            args.append(date)
        if start_date is not None:
            sql += " AND substr(start_time, 1, 10) >= ?"
            args.append(start_date)
        if end_date is not None:
            sql += " AND substr(start_time, 1, 10) <= ?"
            args.append(end_date)
        sql += " ORDER BY start_time, id LIMIT ? OFFSET ?"
        args += [page_size, page_index * page_size]
        return [_event(r) for r in self._db.execute(sql, args)]

    def show_event(self, access_token: str, event_id: int) -> dict:
        """Show one event.

        Args:
            access_token: from apis.calendar.login(...).
            event_id: the event's id.
        Returns:
            {"id", "title", "start_time", "end_time", "location", "description", "attendees"}.
        """
        self._auth("show_event", access_token)
        return _event(self._row("show_event", event_id))

    def create_event(self, access_token: str, title: str, start_time: str, end_time: str,
                     attendees: list | None = None, location: str = "",
                     description: str = "") -> dict:
        """Create an event.

        Args:
            access_token: from apis.calendar.login(...).
            title: the title.
            start_time: 'YYYY-MM-DDTHH:MM'.
            end_time: 'YYYY-MM-DDTHH:MM', after start_time.
            attendees: emails of the people invited (not the supervisor), or None for nobody.
            location: where; "" for nowhere in particular.
            description: free text.
        Returns:
            {"event_id": int}.
        """
        self._auth("create_event", access_token)
        v = self._v("create_event")
        v.text("title", title)
        v.datetime("start_time", start_time)
        v.datetime("end_time", end_time)
        if end_time <= start_time:
            raise fail("calendar.create_event", "end_time", "must be after start_time", end_time)
        guests = [] if attendees is None else v.emails("attendees", attendees, min_len=0)
        v.text("location", location, allow_empty=True)
        v.text("description", description, allow_empty=True)
        cur = self._db.execute(
            "INSERT INTO events (title, start_time, end_time, location, description, attendees, "
            "created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (title, start_time, end_time, location, description, json.dumps(guests), NOW))
        return {"event_id": cur.lastrowid}

    def delete_event(self, access_token: str, event_id: int) -> dict:
        """Delete an event.

        Args:
            access_token: from apis.calendar.login(...).
            event_id: the event's id.
        Returns:
            {"deleted": true}.
        """
        self._auth("delete_event", access_token)
        self._row("delete_event", event_id)
        self._db.execute("DELETE FROM events WHERE id = ?", (event_id,))
        return {"deleted": True}

    def _row(self, api: str, event_id: Any) -> tuple:
        self._v(api).integer("event_id", event_id, minimum=1)
        row = self._db.execute(f"SELECT {', '.join(EVENT_COLUMNS)} FROM events WHERE id = ?",
                               (event_id,)).fetchone()
        if row is None:
            raise fail(f"calendar.{api}", "event_id", "must be the id of an existing event",
                       event_id)
        return row


EMAIL_COLUMNS = ("id", "sender", "recipients", "subject", "body", "sent_at")


def _email(row: tuple, with_body: bool = True) -> dict:
    e = dict(zip(EMAIL_COLUMNS, row))
    e["recipients"] = json.loads(e["recipients"])
    if not with_body:
        del e["body"]
    return e


class Mail(App):
    name = "mail"
    description = "The supervisor's mailbox: read received and sent email, send email."

    def show_inbox(self, access_token: str, query: str = "", sender: str | None = None,
                   page_index: int = 0, page_size: int = 10) -> list:
        """List received emails, newest first (paged; bodies via show_email).

        Args:
            access_token: from apis.mail.login(...).
            query: text matched case-insensitively against the subject; "" matches all.
            sender: only emails from this address.
            page_index: which page, from 0.
            page_size: emails per page, 1..20.
        Returns:
            [{"id", "sender", "recipients", "subject", "sent_at"}, ...]; [] past the last page.
        """
        user = self._auth("show_inbox", access_token)
        return self._list("show_inbox", "recipients LIKE ?", f'%"{user}"%', query, sender,
                          page_index, page_size)

    def show_sent(self, access_token: str, query: str = "", page_index: int = 0,
                  page_size: int = 10) -> list:
        """List sent emails, newest first (paged; bodies via show_email).

        Args:
            access_token: from apis.mail.login(...).
            query: text matched case-insensitively against the subject; "" matches all.
            page_index: which page, from 0.
            page_size: emails per page, 1..20.
        Returns:
            [{"id", "sender", "recipients", "subject", "sent_at"}, ...]; [] past the last page.
        """
        user = self._auth("show_sent", access_token)
        return self._list("show_sent", "sender = ?", user, query, None, page_index, page_size)

    def show_email(self, access_token: str, email_id: int) -> dict:
        """Show one email with its body.

        Args:
            access_token: from apis.mail.login(...).
            email_id: the email's id.
        Returns:
            {"id", "sender", "recipients", "subject", "body", "sent_at"}.
        """
        user = self._auth("show_email", access_token)
        self._v("show_email").integer("email_id", email_id, minimum=1)
        row = self._db.execute(f"SELECT {', '.join(EMAIL_COLUMNS)} FROM emails WHERE id = ?",
                               (email_id,)).fetchone()
        if row is None or (row[1] != user and user not in json.loads(row[2])):
            raise fail("mail.show_email", "email_id", "must be the id of an email in your mailbox",
                       email_id)
        return _email(row)

    def send_email(self, access_token: str, recipients: list, subject: str, body: str) -> dict:
        """Send an email.

        Args:
            access_token: from apis.mail.login(...).
            recipients: list of recipient email addresses (at least one).
            subject: the subject line.
            body: the text.
        Returns:
            {"email_id": int}.
        """
        user = self._auth("send_email", access_token)
        v = self._v("send_email")
        to = v.emails("recipients", recipients)
        v.text("subject", subject)
        v.text("body", body, allow_empty=True)
        cur = self._db.execute("INSERT INTO emails (sender, recipients, subject, body, sent_at) "
                               "VALUES (?, ?, ?, ?, ?)", (user, json.dumps(to), subject, body, NOW))
        return {"email_id": cur.lastrowid}

    def _list(self, api: str, where: str, who: str, query: Any, sender: Any, page_index: Any,
              page_size: Any) -> list:
        v = self._v(api)
        v.text("query", query, allow_empty=True)
        page_index, page_size = v.page(page_index, page_size)
        sql = f"SELECT {', '.join(EMAIL_COLUMNS)} FROM emails WHERE {where} AND lower(subject) LIKE ?"
        args: list[Any] = [who, f"%{query.lower()}%"]
        if sender is not None:
            sql += " AND sender = ?"
            args.append(v.email("sender", sender))
        sql += " ORDER BY sent_at DESC, id DESC LIMIT ? OFFSET ?"
        args += [page_size, page_index * page_size]
        return [_email(r, with_body=False) for r in self._db.execute(sql, args)]


NOTE_COLUMNS = ("id", "title", "content", "created_at", "updated_at")


class Notes(App):
    name = "notes"
    description = "The supervisor's notes: a title and free text each."

    def search_notes(self, access_token: str, query: str = "", page_index: int = 0,
                     page_size: int = 10) -> list:
        """Search notes by title (paged, sorted by title).

        Args:
            access_token: from apis.notes.login(...).
            query: text matched case-insensitively against the title; "" matches all.
            page_index: which page, from 0.
            page_size: notes per page, 1..20.
        Returns:
            [{"id", "title", "created_at", "updated_at"}, ...]; [] past the last page.
        """
        self._auth("search_notes", access_token)
        v = self._v("search_notes")
        v.text("query", query, allow_empty=True)
        page_index, page_size = v.page(page_index, page_size)
        rows = self._db.execute("SELECT id, title, created_at, updated_at FROM notes WHERE "
                                "lower(title) LIKE ? ORDER BY title, id LIMIT ? OFFSET ?",
                                (f"%{query.lower()}%", page_size, page_index * page_size))
        return [dict(zip(("id", "title", "created_at", "updated_at"), r)) for r in rows]

    def show_note(self, access_token: str, note_id: int) -> dict:
        """Show one note with its content.

        Args:
            access_token: from apis.notes.login(...).
            note_id: the note's id.
        Returns:
            {"id", "title", "content", "created_at", "updated_at"}.
        """
        self._auth("show_note", access_token)
        return dict(zip(NOTE_COLUMNS, self._row("show_note", note_id)))

    def create_note(self, access_token: str, title: str, content: str) -> dict:
        """Create a note.

        Args:
            access_token: from apis.notes.login(...).
            title: the title.
            content: the text.
        Returns:
            {"note_id": int}.
        """
        self._auth("create_note", access_token)
        v = self._v("create_note")
        v.text("title", title)
        v.text("content", content, allow_empty=True)
        cur = self._db.execute("INSERT INTO notes (title, content, created_at, updated_at) "
                               "VALUES (?, ?, ?, ?)", (title, content, NOW, NOW))
        return {"note_id": cur.lastrowid}

    def update_note(self, access_token: str, note_id: int, title: str | None = None,
                    content: str | None = None) -> dict:
        """Change a note's title and/or content; None keeps the value.

        Args:
            access_token: from apis.notes.login(...).
            note_id: the note's id.
            title: the new title.
            content: the new text (replaces the old text).
        Returns:
            the updated note.
        """
        self._auth("update_note", access_token)
        old = dict(zip(NOTE_COLUMNS, self._row("update_note", note_id)))
        v = self._v("update_note")
        if title is None and content is None:
            raise ApiError("notes.update_note: give at least one of the arguments 'title', 'content'")
        title = old["title"] if title is None else v.text("title", title)
        content = old["content"] if content is None else v.text("content", content, allow_empty=True)
        self._db.execute("UPDATE notes SET title = ?, content = ?, updated_at = ? WHERE id = ?",
                         (title, content, NOW, note_id))
        return self.show_note(access_token, note_id)

    def delete_note(self, access_token: str, note_id: int) -> dict:
        """Delete a note.

        Args:
            access_token: from apis.notes.login(...).
            note_id: the note's id.
        Returns:
            {"deleted": true}.
        """
        self._auth("delete_note", access_token)
        self._row("delete_note", note_id)
        self._db.execute("DELETE FROM notes WHERE id = ?", (note_id,))
        return {"deleted": True}

    def _row(self, api: str, note_id: Any) -> tuple:
        self._v(api).integer("note_id", note_id, minimum=1)
        row = self._db.execute(f"SELECT {', '.join(NOTE_COLUMNS)} FROM notes WHERE id = ?",
                               (note_id,)).fetchone()
        if row is None:
            raise fail(f"notes.{api}", "note_id", "must be the id of an existing note", note_id)
        return row


TX_COLUMNS = ("id", "sender", "receiver", "amount", "description", "created_at")
REQ_COLUMNS = ("id", "requester", "payer", "amount", "description", "status", "created_at",
               "resolved_at")


class Payments(App):
    name = "payments"
    description = "The supervisor's money: balance, transactions, payment requests."

    def show_balance(self, access_token: str) -> dict:
        """Show the account balance.

        Args:
            access_token: from apis.payments.login(...).
        Returns:
            {"balance": dollars}.
        """
        user = self._auth("show_balance", access_token)
        return {"balance": self._balance(user)}

    def show_transactions(self, access_token: str, direction: str | None = None,
                          start_date: str | None = None, end_date: str | None = None,
                          page_index: int = 0, page_size: int = 10) -> list:
        """List transactions, newest first (paged).

        Args:
            access_token: from apis.payments.login(...).
            direction: 'sent' (you paid), 'received' (you were paid) or None for both.
            start_date: only transactions on or after this day 'YYYY-MM-DD'.
            end_date: only transactions on or before this day 'YYYY-MM-DD'.
            page_index: which page, from 0.
            page_size: transactions per page, 1..20.
        Returns:
            [{"id", "sender", "receiver", "amount", "description", "created_at"}, ...];
            [] past the last page.
        """
        user = self._auth("show_transactions", access_token)
        v = self._v("show_transactions")
        if direction is not None:
            v.choice("direction", direction, ("sent", "received"))
        v.opt_date("start_date", start_date)
        v.opt_date("end_date", end_date)
        page_index, page_size = v.page(page_index, page_size)
        where = {"sent": "sender = ?", "received": "receiver = ?",
                 None: "(sender = ? OR receiver = ?)"}[direction]
        args: list[Any] = [user] if direction else [user, user]
        sql = f"SELECT {', '.join(TX_COLUMNS)} FROM transactions WHERE {where}"
        if start_date is not None:
            sql += " AND substr(created_at, 1, 10) >= ?"
            args.append(start_date)
        if end_date is not None:
            sql += " AND substr(created_at, 1, 10) <= ?"
            args.append(end_date)
        sql += " ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?"
        args += [page_size, page_index * page_size]
        return [dict(zip(TX_COLUMNS, r)) for r in self._db.execute(sql, args)]

    def send_money(self, access_token: str, receiver_email: str, amount: float,
                   description: str = "") -> dict:
        """Pay someone from your balance.

        Args:
            access_token: from apis.payments.login(...).
            receiver_email: the payee's email (anyone in the world, not yourself).
            amount: dollars, > 0, at most 2 decimals, at most your balance.
            description: what it is for.
        Returns:
            {"transaction_id": int}.
        """
        user = self._auth("send_money", access_token)
        v = self._v("send_money")
        to = self._person("send_money", "receiver_email", receiver_email, user)
        amount = v.amount("amount", amount)
        v.text("description", description, allow_empty=True)
        return {"transaction_id": self._pay(user, to, amount, description, "send_money")}

    def request_money(self, access_token: str, payer_email: str, amount: float,
                      description: str = "") -> dict:
        """Ask someone to pay you.

        Args:
            access_token: from apis.payments.login(...).
            payer_email: who should pay (anyone in the world, not yourself).
            amount: dollars, > 0, at most 2 decimals.
            description: what it is for.
        Returns:
            {"payment_request_id": int}.
        """
        user = self._auth("request_money", access_token)
        v = self._v("request_money")
        payer = self._person("request_money", "payer_email", payer_email, user)
        amount = v.amount("amount", amount)
        v.text("description", description, allow_empty=True)
        cur = self._db.execute(
            "INSERT INTO payment_requests (requester, payer, amount, description, status, "
            "created_at, resolved_at) VALUES (?, ?, ?, ?, 'pending', ?, NULL)",
            (user, payer, amount, description, NOW))
        return {"payment_request_id": cur.lastrowid}

    def show_payment_requests(self, access_token: str, direction: str = "received",
                              status: str | None = "pending", page_index: int = 0,
                              page_size: int = 10) -> list:
        """List payment requests, newest first (paged).

        Args:
            access_token: from apis.payments.login(...).
            direction: 'received' (others ask you to pay) or 'sent' (you asked others).
            status: 'pending', 'approved', 'denied', or None for any.
            page_index: which page, from 0.
            page_size: requests per page, 1..20.
        Returns:
            [{"id", "requester", "payer", "amount", "description", "status", "created_at",
            "resolved_at"}, ...]; [] past the last page.
        """
        user = self._auth("show_payment_requests", access_token)
        v = self._v("show_payment_requests")
        v.choice("direction", direction, ("received", "sent"))
        if status is not None:
            v.choice("status", status, ("pending", "approved", "denied"))
        page_index, page_size = v.page(page_index, page_size)
        sql = f"SELECT {', '.join(REQ_COLUMNS)} FROM payment_requests WHERE " + \
              ("payer = ?" if direction == "received" else "requester = ?")
        args: list[Any] = [user]
        if status is not None:
            sql += " AND status = ?"
            args.append(status)
        sql += " ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?"
        args += [page_size, page_index * page_size]
        return [dict(zip(REQ_COLUMNS, r)) for r in self._db.execute(sql, args)]

    def approve_payment_request(self, access_token: str, payment_request_id: int) -> dict:
        """Pay a pending request someone sent you.

        Args:
            access_token: from apis.payments.login(...).
            payment_request_id: the id of a pending request you received.
        Returns:
            {"transaction_id": int}.
        """
        user = self._auth("approve_payment_request", access_token)
        req = self._pending("approve_payment_request", payment_request_id, user)
        tx = self._pay(user, req["requester"], req["amount"], req["description"],
                       "approve_payment_request")
        self._db.execute("UPDATE payment_requests SET status = 'approved', resolved_at = ? "
                         "WHERE id = ?", (NOW, payment_request_id))
        return {"transaction_id": tx}

    def deny_payment_request(self, access_token: str, payment_request_id: int) -> dict:
        """Refuse a pending request someone sent you.

        Args:
            access_token: from apis.payments.login(...).
            payment_request_id: the id of a pending request you received.
        Returns:
            {"denied": true}.
        """
        user = self._auth("deny_payment_request", access_token)
        self._pending("deny_payment_request", payment_request_id, user)
        self._db.execute("UPDATE payment_requests SET status = 'denied', resolved_at = ? "
                         "WHERE id = ?", (NOW, payment_request_id))
        return {"denied": True}

    def _balance(self, email: str) -> float:
        return round(self._db.execute("SELECT balance FROM balances WHERE email = ?",
                                      (email,)).fetchone()[0], 2)

    def _person(self, api: str, arg: str, value: Any, user: str) -> str:
        email = self._v(api).email(arg, value)
        if email == user:
            raise fail(f"payments.{api}", arg, "must not be your own email", value)
        if not self._db.execute("SELECT 1 FROM balances WHERE email = ?", (email,)).fetchone():
            raise fail(f"payments.{api}", arg, "must be the email of someone with a payments "
                       "account", value)
        return email

    def _pending(self, api: str, request_id: Any, user: str) -> dict:
        self._v(api).integer("payment_request_id", request_id, minimum=1)
        row = self._db.execute(f"SELECT {', '.join(REQ_COLUMNS)} FROM payment_requests "
                               "WHERE id = ? AND payer = ?", (request_id, user)).fetchone()
        if row is None:
            raise fail(f"payments.{api}", "payment_request_id",
                       "must be the id of a payment request you received", request_id)
        req = dict(zip(REQ_COLUMNS, row))
        if req["status"] != "pending":
            raise fail(f"payments.{api}", "payment_request_id",
                       f"must be a pending request (this one is {req['status']})", request_id)
        return req

    def _pay(self, sender: str, receiver: str, amount: float, description: str, api: str) -> int:
        if amount > self._balance(sender):
            raise fail(f"payments.{api}", "amount", f"must not exceed your balance "
                       f"({self._balance(sender):.2f})", amount)
        self._db.execute("UPDATE balances SET balance = round(balance - ?, 2) WHERE email = ?",
                         (amount, sender))
        self._db.execute("UPDATE balances SET balance = round(balance + ?, 2) WHERE email = ?",
                         (amount, receiver))
        cur = self._db.execute("INSERT INTO transactions (sender, receiver, amount, description, "
                               "created_at) VALUES (?, ?, ?, ?, ?)",
                               (sender, receiver, amount, description, NOW))
        return cur.lastrowid


APP_CLASSES = (Supervisor, ApiDocs, Contacts, Calendar, Mail, Notes, Payments)
assert tuple(c.name for c in APP_CLASSES) == APPS
assert MAX_PAGE_SIZE == 20


def build_apps(world: Any) -> dict[str, App]:
    """One instance of every app, bound to `world`, by name."""
    return {cls.name: cls(world) for cls in APP_CLASSES}

def access_token(app_name):
    """Log in to one app as the supervisor; returns the access token."""
    email = apis.supervisor.show_profile()["email"]
    passwords = {p["account_name"]: p["password"] for p in apis.supervisor.show_account_passwords()}
    return getattr(apis, app_name).login(username=email, password=passwords[app_name])["access_token"]


def all_pages(fetch, **kwargs):
    """Calls a paged API until an empty page; returns every item."""
    items, page_index = [], 0
    while True:
        page = fetch(page_index=page_index, page_size=20, **kwargs)
        if not page:
            return items
        items.extend(page)
        page_index += 1


def write_agenda(date):
    """Creates the note 'Agenda <date>' listing that day's events as 'HH:MM-HH:MM Title'."""
    events = all_pages(apis.calendar.show_events, access_token=access_token("calendar"), date=date)
    events.sort(key=lambda e: e["start_time"])
    lines = [f"{e['start_time'][11:]}-{e['end_time'][11:]} {e['title']}" for e in events]
    return apis.notes.create_note(access_token=access_token("notes"), title=f"Agenda {date}",
                                  content="\n".join(lines))


write_agenda('2026-06-03')
apis.supervisor.complete_task()

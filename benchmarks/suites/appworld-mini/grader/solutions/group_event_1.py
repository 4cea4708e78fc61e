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


def contacts_by(relationship=None, city=None):
    """The supervisor's contacts, optionally only one relationship and/or city."""
    token = access_token("contacts")
    return all_pages(apis.contacts.search_contacts, access_token=token,
                     relationship=relationship, city=city)


def invite_group(title, start_time, end_time, location, relationship):
    """Creates an event with every contact of `relationship` as an attendee."""
    attendees = [c["email"] for c in contacts_by(relationship=relationship)]
    return apis.calendar.create_event(access_token=access_token("calendar"), title=title,
                                      start_time=start_time, end_time=end_time,
                                      attendees=attendees, location=location)


invite_group('Project sync', '2026-06-10T10:00', '2026-06-10T11:00', 'Office', 'coworker')
apis.supervisor.complete_task()

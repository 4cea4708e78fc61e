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


def send_birthday_emails(relationship, month):
    """Emails 'Happy birthday!' to each contact of `relationship` born in `month` (1-12)."""
    mail_token = access_token("mail")
    sent = []
    for c in contacts_by(relationship=relationship):
        if int(c["birthday"][5:7]) == month:
            apis.mail.send_email(access_token=mail_token, recipients=[c["email"]],
                                 subject="Happy birthday!", body=f"Happy birthday, {c['first_name']}!")
            sent.append(c["email"])
    return sent


send_birthday_emails('coworker', 8)
apis.supervisor.complete_task()

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


def apply_phone_updates(relationship):
    """Updates the phone of each `relationship` contact who mailed a 'New phone number'."""
    import re
    by_email = {c["email"]: c for c in contacts_by(relationship=relationship)}
    mail_token, contacts_token = access_token("mail"), access_token("contacts")
    updated = {}
    for m in all_pages(apis.mail.show_inbox, access_token=mail_token, query="New phone number"):
        if m["sender"] not in by_email:
            continue
        body = apis.mail.show_email(access_token=mail_token, email_id=m["id"])["body"]
        phone = re.search(r"new phone number is ([0-9][0-9 -]*[0-9])", body).group(1)
        apis.contacts.update_contact(access_token=contacts_token,
                                     contact_id=by_email[m["sender"]]["id"], phone=phone)
        updated[m["sender"]] = phone
    return updated


apply_phone_updates('friend')
apis.supervisor.complete_task()

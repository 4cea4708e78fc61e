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


def total_sent_to(relationship, start_date, end_date):
    """Dollars the supervisor sent to contacts of `relationship` between two dates (inclusive)."""
    emails = {c["email"] for c in contacts_by(relationship=relationship)}
    txs = all_pages(apis.payments.show_transactions, access_token=access_token("payments"),
                    direction="sent", start_date=start_date, end_date=end_date)
    return round(sum(t["amount"] for t in txs if t["receiver"] in emails), 2)


answer = total_sent_to('coworker', '2026-05-01', '2026-05-31')
apis.supervisor.complete_task(answer=answer)

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


def settle_requests(relationship, limit):
    """Approves pending requests from `relationship` contacts up to `limit` dollars, denies the rest."""
    emails = {c["email"] for c in contacts_by(relationship=relationship)}
    token = access_token("payments")
    pending = all_pages(apis.payments.show_payment_requests, access_token=token,
                        direction="received", status="pending")
    for r in pending:
        if r["requester"] not in emails:
            continue
        if r["amount"] <= limit:
            apis.payments.approve_payment_request(access_token=token, payment_request_id=r["id"])
        else:
            apis.payments.deny_payment_request(access_token=token, payment_request_id=r["id"])


settle_requests('friend', 50)
apis.supervisor.complete_task()

"""The API machinery shared by every app: errors, argument validation, access tokens and the
`apis` object an agent calls (`apis.<app>.<method>(...)`).

Every public method of an :class:`App` subclass is an API. Calls are checked against the method's
signature before they run, so a wrong or missing argument raises :class:`ApiError` naming the
argument and the rule instead of a Python ``TypeError`` from deep inside the app.
"""

from __future__ import annotations

import hashlib
import inspect
import re
import sqlite3
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from .world import World

EMAIL_RE = re.compile(r"^[a-z0-9._+-]+@[a-z0-9.-]+\.[a-z]{2,}$")
DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
DATETIME_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$")
MAX_PAGE_SIZE = 20


class ApiError(Exception):
    """An API call broke a rule; the message names the API, the argument and the rule."""


def fail(api: str, arg: str, rule: str, got: Any = inspect.Parameter.empty) -> ApiError:
    """Builds the error for argument `arg` of `api` that broke `rule` (with the value seen)."""
    seen = "" if got is inspect.Parameter.empty else f" (got {got!r})"
    return ApiError(f"{api}: argument '{arg}' {rule}{seen}")


class Validator:
    """Argument checks for one API call; each raises :class:`ApiError` on a broken rule."""

    def __init__(self, api: str) -> None:
        self.api = api

    def text(self, name: str, value: Any, *, allow_empty: bool = False,
             max_len: int = 10_000) -> str:
        if not isinstance(value, str):
            raise fail(self.api, name, "must be a string", value)
        if not allow_empty and not value.strip():
            raise fail(self.api, name, "must be a non-empty string", value)
        if len(value) > max_len:
            raise fail(self.api, name, f"must be at most {max_len} characters long", len(value))
        return value

    def opt_text(self, name: str, value: Any, **kw: Any) -> str | None:
        return None if value is None else self.text(name, value, **kw)

    def email(self, name: str, value: Any) -> str:
        if not isinstance(value, str) or not EMAIL_RE.match(value.strip().lower()):
            raise fail(self.api, name, "must be an email address like 'name@example.com'", value)
        return value.strip().lower()

    def emails(self, name: str, value: Any, *, min_len: int = 1) -> list[str]:
        if isinstance(value, str) or not isinstance(value, (list, tuple)):
            raise fail(self.api, name, "must be a list of email addresses", value)
        if len(value) < min_len:
            raise fail(self.api, name, f"must hold at least {min_len} email address(es)", value)
        out = []
        for i, v in enumerate(value):
            out.append(self.email(f"{name}[{i}]", v))
        return sorted(set(out))

    def integer(self, name: str, value: Any, *, minimum: int | None = None,
                maximum: int | None = None) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise fail(self.api, name, "must be an integer", value)
        if minimum is not None and value < minimum:
            raise fail(self.api, name, f"must be >= {minimum}", value)
        if maximum is not None and value > maximum:
            raise fail(self.api, name, f"must be <= {maximum}", value)
        return value

    def amount(self, name: str, value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise fail(self.api, name, "must be a number of dollars", value)
        if value <= 0:
            raise fail(self.api, name, "must be greater than 0", value)
        if round(value, 2) != round(value, 6):
            raise fail(self.api, name, "must have at most 2 decimal places (cents)", value)
        return round(float(value), 2)

    def date(self, name: str, value: Any) -> str:
        if not isinstance(value, str) or not DATE_RE.match(value):
            raise fail(self.api, name, "must be a date 'YYYY-MM-DD'", value)
        return value

    def opt_date(self, name: str, value: Any) -> str | None:
        return None if value is None else self.date(name, value)

    def datetime(self, name: str, value: Any) -> str:
        if not isinstance(value, str) or not DATETIME_RE.match(value):
            raise fail(self.api, name, "must be a date and time 'YYYY-MM-DDTHH:MM'", value)
        return value

    def choice(self, name: str, value: Any, options: tuple[Any, ...]) -> Any:
        if value not in options:
            raise fail(self.api, name, f"must be one of {', '.join(map(repr, options))}", value)
        return value

    def page(self, page_index: Any, page_size: Any) -> tuple[int, int]:
        return (self.integer("page_index", page_index, minimum=0),
                self.integer("page_size", page_size, minimum=1, maximum=MAX_PAGE_SIZE))


def token_for(secret: str, app: str, email: str) -> str:
    """The access token of `email` for `app` in a world with `secret` (stateless, reproducible)."""
    digest = hashlib.sha256(f"{secret}|{app}|{email}".encode()).hexdigest()[:32]
    return f"{app}.{digest}"


class App:
    """One app of the world. Subclasses set `name`/`description`; public methods are its APIs."""

    name = ""
    description = ""
    needs_login = True

    def __init__(self, world: "World") -> None:
        self._world = world

    @property
    def _db(self) -> sqlite3.Connection:
        return self._world.db

    def _v(self, api: str) -> Validator:
        return Validator(f"{self.name}.{api}")

    def _auth(self, api: str, access_token: Any) -> str:
        """The email of the user `access_token` belongs to, or an ApiError naming the rule."""
        if not isinstance(access_token, str) or not access_token:
            raise fail(f"{self.name}.{api}", "access_token",
                       f"must be the access_token string returned by apis.{self.name}.login(...)",
                       access_token)
        user = self._world.supervisor_email()
        if access_token != token_for(self._world.secret(), self.name, user):
            raise fail(f"{self.name}.{api}", "access_token",
                       f"is not a valid token for the {self.name} app; "
                       f"log in with apis.{self.name}.login(username=..., password=...)")
        return user

    def login(self, username: str, password: str) -> dict:
        """Log in to this app.

        Args:
            username: the account's email address.
            password: the account's password for this app (see apis.supervisor.show_account_passwords()).
        Returns:
            {"access_token": str, "token_type": "Bearer"}; pass access_token=... to the other APIs.
        """
        v = self._v("login")
        email = v.email("username", username)
        v.text("password", password)
        row = self._db.execute("SELECT password FROM passwords WHERE app = ? AND email = ?",
                               (self.name, email)).fetchone()
        if row is None:
            raise fail(f"{self.name}.login", "username", f"has no account in the {self.name} app",
                       username)
        if row[0] != password:
            raise fail(f"{self.name}.login", "password", f"is wrong for this {self.name} account")
        return {"access_token": token_for(self._world.secret(), self.name, email),
                "token_type": "Bearer"}

    @classmethod
    def api_names(cls) -> list[str]:
        names = [n for n, f in inspect.getmembers(cls, inspect.isfunction) if not n.startswith("_")]
        if not cls.needs_login and "login" in names:
            names.remove("login")
        order = {n: i for i, n in enumerate(cls.__dict__)}
        # login first, then the app's own methods in definition order.
        return sorted(names, key=lambda n: (n != "login", order.get(n, -1), n))


class AppProxy:
    """What `apis.<app>` returns: checks each call against the signature, then runs it."""

    def __init__(self, app: App) -> None:
        object.__setattr__(self, "_app", app)

    def __getattr__(self, api: str) -> Callable[..., Any]:
        app = object.__getattribute__(self, "_app")
        if api.startswith("__"):  # copy, pickle, inspect probe dunders: a plain "no"
            raise AttributeError(api)
        if api.startswith("_") or api not in type(app).api_names():
            raise ApiError(
                f"apis.{app.name}: the app has no API '{api}'; list them with "
                f"apis.api_docs.show_api_descriptions(app_name='{app.name}')")
        fn = getattr(app, api)
        sig = inspect.signature(fn)

        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                bound = sig.bind(*args, **kwargs)
            except TypeError as e:
                accepted = ", ".join(sig.parameters) or "none"
                raise ApiError(f"{app.name}.{api}: {e} (accepted arguments: {accepted})") from None
            bound.apply_defaults()
            return fn(*bound.args, **bound.kwargs)

        call.__name__ = api
        call.__doc__ = fn.__doc__
        return call

    def __setattr__(self, name: str, value: Any) -> None:
        raise ApiError(f"apis.{object.__getattribute__(self, '_app').name} is read-only")

    def __dir__(self) -> list[str]:
        return type(object.__getattribute__(self, "_app")).api_names()

    def __repr__(self) -> str:
        return f"<app {object.__getattribute__(self, '_app').name}>"


class Apis:
    """The `apis` object: one attribute per app."""

    def __init__(self, apps: dict[str, App]) -> None:
        object.__setattr__(self, "_apps", apps)

    def __getattr__(self, name: str) -> AppProxy:
        apps = object.__getattribute__(self, "_apps")
        if name.startswith("__"):
            raise AttributeError(name)
        if name not in apps:
            raise ApiError(f"apis: there is no app '{name}'; the apps are {', '.join(apps)} "
                           f"(see apis.api_docs.show_app_descriptions())")
        return AppProxy(apps[name])

    def __setattr__(self, name: str, value: Any) -> None:
        raise ApiError("apis is read-only")

    def __dir__(self) -> list[str]:
        return list(object.__getattribute__(self, "_apps"))

    def __repr__(self) -> str:
        return f"<apis: {', '.join(object.__getattribute__(self, '_apps'))}>"


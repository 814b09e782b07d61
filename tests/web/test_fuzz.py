"""Hostile values in every form field, query parameter and JSON property: never a 5xx.

A lean, deterministic fuzz over the app as it is (issue 12, item 8): the forms are read
from the pages a user sees (their fields and default values), each field in turn gets
each hostile value while the others keep theirs; the JSON API and every GET route's
query parameters are walked from the OpenAPI schema the app builds. Every answer must
be below 500 and carry no traceback.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from html.parser import HTMLParser
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.demo.pgcluster import PgCluster
from tests.web.data import Seeded, seed, seeded_app

HOSTILE_TEXT = [
    "x" * 60_000,  # a huge string (forms allow 64 KB in all)
    "-99999999999999999999",
    "1" + "0" * 40,  # beyond int8
    "nan",
    "\u202eevil\u202c \U0001f680 e\u0301 {{7*7}} <script>x</script> ' \" ; --",
]
# a URL of 60 KB is the server's to refuse; instants at the ends of the calendar
HOSTILE_QUERY = [
    *HOSTILE_TEXT[1:],
    "x" * 8000,
    "inf",
    "0001-01-01T00:00:00+14:00",
    "9999-12-31T23:59:59-14:00",
]
HOSTILE_JSON: list[Any] = [
    10**30,
    "9999-12-31T23:59:59-14:00",
    -1,
    "x" * 60_000,
    "\u202e\U0001f680",
    [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["deep"]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]],
]
FORM_PAGES = [
    "/targets/new",
    "/targets/sales/edit",
    "/alerts",
    "/alerts/rules/edit",
    "/alerts/contacts",
    "/alerts/maintenance",
    "/report/subscriptions",
]
SKIP_FIELDS = {"csrf_token"}


class _Forms(HTMLParser):
    """Forms of a page: action, method and [name, value] of each field."""

    def __init__(self) -> None:
        super().__init__()
        self.forms: list[tuple[str, str, list[list[str]]]] = []
        self._select: list[str] | None = None
        self._textarea: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "form":
            self.forms.append((a.get("action", ""), a.get("method", "get").lower(), []))
        elif not self.forms or "name" not in a:
            if tag == "option" and self._select is not None and not self._select[1]:
                self._select[1] = a.get("value", "")
            return
        elif tag == "input":
            kind = a.get("type", "text")
            if kind in ("checkbox", "radio") and "checked" not in a:
                return
            self.forms[-1][2].append(
                [a["name"], a.get("value", "on" if kind == "checkbox" else "")]
            )
        elif tag == "select":
            self._select = [a["name"], ""]
            self.forms[-1][2].append(self._select)
        elif tag == "textarea":
            self._textarea = [a["name"], ""]
            self.forms[-1][2].append(self._textarea)

    def handle_data(self, data: str) -> None:
        if self._textarea is not None:
            self._textarea[1] += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "select":
            self._select = None
        elif tag == "textarea":
            self._textarea = None


@pytest.fixture(scope="module")
def env(pg_cluster: PgCluster) -> Iterator[tuple[TestClient, Seeded]]:
    with seeded_app(pg_cluster, "fuzz_", lambda e, v: seed(e, v, hours=0.25)) as made:
        yield made


STALL_S = 10.0  # a hostile value held a request (and the event loop) for 50 s: a ReDoS


def _send(client: TestClient, what: str, failures: list[str], *args: Any, **kw: Any) -> None:
    t0 = time.perf_counter()
    try:
        res = client.request(*args, follow_redirects=False, **kw)
    except Exception as exc:  # the test client re-raises what the app let escape (a 500)
        failures.append(f"{what}: {type(exc).__name__}: {str(exc)[:120]}")
        return
    took = time.perf_counter() - t0
    if res.status_code >= 500 or "Traceback" in res.text:
        failures.append(f"{what}: {res.status_code} {res.text[:160]!r}")
    if took > STALL_S:
        failures.append(f"{what}: took {took:.1f} s")


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) < 40 else text[:37] + "..."


def test_hostile_values_in_every_form_field(env: tuple[TestClient, Seeded]) -> None:
    client, _ = env
    failures: list[str] = []
    posted = 0
    for page in FORM_PAGES:
        res = client.get(page, headers={"accept": "text/html"})
        assert res.status_code == 200, (page, res.status_code)
        parser = _Forms()
        parser.feed(res.text)
        for action, method, fields in parser.forms:
            if method != "post" or not action or "/delete" in action or "/send" in action:
                continue
            # the target form's mode rows repeat: the first row stands for the others
            names = [
                n for n, _ in fields if n not in SKIP_FIELDS and not re.match(r"mode-[1-9]", n)
            ]
            for name in dict.fromkeys(names):
                for value in HOSTILE_TEXT:
                    data = {n: (value if n == name else v) for n, v in fields}
                    what = f"POST {action} {name}={_short(value)}"
                    _send(client, what, failures, "POST", action, data=data)
                    posted += 1
    assert posted > 150  # the forms were found and walked
    assert not failures, "\n".join(failures)


def _schema_value(schema: dict[str, Any], spec: dict[str, Any]) -> Any:
    """A plausible value for a JSON schema (so that one hostile property is the problem)."""
    if "$ref" in schema:
        return _schema_value(spec["components"]["schemas"][schema["$ref"].split("/")[-1]], spec)
    if "anyOf" in schema:
        return _schema_value(schema["anyOf"][0], spec)
    if "default" in schema:
        return schema["default"]
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "object":
        props = schema.get("properties", {})
        return {k: _schema_value(v, spec) for k, v in props.items()}
    return {"integer": 1, "number": 1.0, "boolean": True, "array": []}.get(kind or "", "sales")


def test_hostile_values_in_the_json_api_and_query_parameters(
    env: tuple[TestClient, Seeded],
) -> None:
    client, _ = env
    spec: dict[str, Any] = client.app.openapi()  # type: ignore[attr-defined]
    failures: list[str] = []
    sent = 0
    for path, ops in spec["paths"].items():
        url = re.sub(r"\{[^}]+\}", "sales", path)
        for method, op in ops.items():
            if "/test" in path or "/send" in path or path.endswith(".pdf"):
                continue  # mail, probes, a browser: their inputs are checked on other routes
            for p in op.get("parameters", []):
                if p["in"] != "query":
                    continue
                for value in HOSTILE_QUERY:
                    what = f"{method.upper()} {url}?{p['name']}={_short(value)}"
                    _send(client, what, failures, method, url, params={p["name"]: value})
                    sent += 1
            body = op.get("requestBody", {}).get("content", {}).get("application/json")
            if body is None:
                continue
            base = _schema_value(body["schema"], spec)
            if not isinstance(base, dict):
                continue
            for prop in base:
                for value in HOSTILE_JSON:
                    what = f"{method.upper()} {url} {prop}={_short(value)}"
                    _send(client, what, failures, method, url, json={**base, prop: value})
                    sent += 1
    assert sent > 200
    assert not failures, "\n".join(failures)
